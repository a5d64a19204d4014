// Unit tests of the npu caching allocator (csrc/core/allocator) without Python:
// split and coalesce, segment sizes, the OOM path, record_stream and
// expandable segments. Linked against the built extension (npudist/_C*.so) and
// libtorch; run by tests/cpp/test_cpp_units.py with NPUDIST_DEVICE_COUNT=1 and
// NPUDIST_DEVICE_MEMORY=64MiB, the expandable_* cases in a second process with
// PYTORCH_NPU_ALLOC_CONF=expandable_segments:True (the config is read once).
#include <c10/util/Exception.h>

#include <atomic>
#include <thread>

#include "core/allocator/caching_allocator.h"
#include "core/stream.h"
#include "driver/driver.h"
#include "unit.h"

using namespace npudist;
namespace {
constexpr size_t MiB = size_t(1) << 20;
using c10::CachingDeviceAllocator::StatType;

core::NpuCachingAllocator& alloc() { return core::npuAllocator(); }
int64_t reserved() { return alloc().getDeviceStats(0).reserved_bytes[size_t(StatType::AGGREGATE)].current; }
int64_t allocated() { return alloc().getDeviceStats(0).allocated_bytes[size_t(StatType::AGGREGATE)].current; }
int64_t segments() { return alloc().getDeviceStats(0).segment[size_t(StatType::AGGREGATE)].current; }
char* addr(const c10::DataPtr& p) { return static_cast<char*>(p.get()); }
}  // namespace

TEST(small_blocks_split_one_segment_and_coalesce) {
  alloc().emptyCache();
  auto a = alloc().allocateOn(0, 1000), b = alloc().allocateOn(0, 1000), c = alloc().allocateOn(0, 1000),
       d = alloc().allocateOn(0, 1000);
  CHECK_EQ(reserved(), int64_t(2 * MiB));  // one small segment
  CHECK_EQ(segments(), int64_t(1));
  CHECK_EQ(allocated(), int64_t(4 * 1024));  // rounded to 512 B
  CHECK(addr(b) == addr(a) + 1024 && addr(c) == addr(b) + 1024 && addr(d) == addr(c) + 1024);
  char* b_ptr = addr(b);
  b.clear();
  c.clear();  // b and c coalesce into one 2 KiB free block between a and d
  auto e = alloc().allocateOn(0, 2048);
  CHECK(addr(e) == b_ptr);  // best fit: the coalesced hole, not the segment's tail
  CHECK_EQ(reserved(), int64_t(2 * MiB));
  a.clear(), d.clear(), e.clear();
  CHECK_EQ(allocated(), int64_t(0));
  CHECK_EQ(reserved(), int64_t(2 * MiB));  // cached
  alloc().emptyCache();
  CHECK_EQ(reserved(), int64_t(0));
}

TEST(large_requests_share_or_own_segments) {
  alloc().emptyCache();
  auto a = alloc().allocateOn(0, 3 * MiB), b = alloc().allocateOn(0, 3 * MiB);
  CHECK_EQ(reserved(), int64_t(20 * MiB));  // 1-10 MiB requests share a 20 MiB segment
  CHECK_EQ(segments(), int64_t(1));
  auto c = alloc().allocateOn(0, 12 * MiB);  // the segment's free 14 MiB is split for it
  CHECK_EQ(segments(), int64_t(1));
  CHECK(addr(c) == addr(b) + 3 * MiB);
  auto d = alloc().allocateOn(0, 15 * MiB + 1);  // no cached block fits: its own segment, rounded to 2 MiB
  CHECK_EQ(reserved(), int64_t(36 * MiB));
  CHECK_EQ(segments(), int64_t(2));
  d.clear();
  a.clear(), b.clear(), c.clear();
  alloc().emptyCache();
  CHECK_EQ(reserved(), int64_t(0));
}

TEST(oom_releases_the_cache_retries_then_raises) {
  alloc().emptyCache();
  auto before = alloc().getDeviceStats(0);
  int64_t observed = -1;
  alloc().setOomObserver([&](int64_t, int64_t requested) { observed = requested; });
  {
    auto cached = alloc().allocateOn(0, 30 * MiB);
  }  // freed: 30 MiB stay cached
  CHECK_EQ(reserved(), int64_t(30 * MiB));
  // 30 cached + 50 new exceed the 64 MiB device: the cache is released and the allocation retried
  auto big = alloc().allocateOn(0, 50 * MiB);
  CHECK(big.get() != nullptr);
  CHECK_EQ(reserved(), int64_t(50 * MiB));
  auto after = alloc().getDeviceStats(0);
  CHECK_EQ(after.num_alloc_retries - before.num_alloc_retries, int64_t(1));
  bool raised = false;
  try {
    auto more = alloc().allocateOn(0, 30 * MiB);
  } catch (const c10::OutOfMemoryError& e) {
    raised = true;
    std::string what = e.what();  // names the request, the capacity and the knob to raise it
    CHECK(what.find("NPU out of memory. Tried to allocate 30.00 MiB") != std::string::npos);
    CHECK(what.find("NPUDIST_DEVICE_MEMORY") != std::string::npos);
  }
  CHECK(raised);
  CHECK_EQ(observed, int64_t(30 * MiB));
  CHECK_EQ(alloc().getDeviceStats(0).num_ooms - before.num_ooms, int64_t(1));
  big.clear();
  alloc().emptyCache();
  alloc().setOomObserver(nullptr);
}

TEST(record_stream_delays_reuse_until_the_stream_caught_up) {
  alloc().emptyCache();
  c10::Stream side = core::streamFromPool(0);
  std::atomic<bool> gate{false};
  core::launchDeferred(side, [&] {
    while (!gate.load()) std::this_thread::yield();
  });
  auto a = alloc().allocateOn(0, 4096);
  char* a_ptr = addr(a);
  alloc().recordStream(a, side);
  a.clear();  // pending: the side stream's work at the time of the free has not run
  auto b = alloc().allocateOn(0, 4096);
  CHECK(addr(b) != a_ptr);
  b.clear();
  gate = true;
  REQUIRE(driver::getDriver().synchronizeStream(core::driverStream(side)) == driver::Error::kSuccess);
  auto c = alloc().allocateOn(0, 4096);
  CHECK(addr(c) == a_ptr);  // reusable once the side stream caught up
  c.clear();
  // a pointer the allocator did not hand out is refused with a clear error
  bool refused = false;
  try {
    static char host_bytes[16];
    c10::DataPtr foreign(host_bytes, c10::Device(c10::DeviceType::PrivateUse1, 0));
    alloc().recordStream(foreign, side);
  } catch (const c10::Error& e) {
    refused = std::string(e.what()).find("record_stream") != std::string::npos;
  }
  CHECK(refused);
  alloc().emptyCache();
}

TEST(expandable_segments_grow_by_granules_and_shrink_on_empty_cache) {
  alloc().emptyCache();
  auto a = alloc().allocateOn(0, 3 * MiB);
  auto b = alloc().allocateOn(0, 3 * MiB);
  CHECK(addr(b) == addr(a) + 3 * MiB);     // one growing range per stream
  CHECK_EQ(reserved(), int64_t(6 * MiB));  // 2 MiB granules mapped as it grows
  auto free0 = alloc().getMemoryInfo(0).first;
  b.clear();
  alloc().emptyCache();  // the free tail is unmapped
  CHECK_EQ(reserved(), int64_t(4 * MiB));
  CHECK_EQ(alloc().getMemoryInfo(0).first - free0, size_t(2 * MiB));
  auto c = alloc().allocateOn(0, 3 * MiB);
  CHECK(addr(c) == addr(a) + 3 * MiB);  // the range grows again in place
  a.clear(), c.clear();
  alloc().emptyCache();
  CHECK_EQ(reserved(), int64_t(0));
}

TEST(expandable_segments_take_the_whole_device_without_fragmenting) {
  // 64 MiB device: 8 MiB blocks fill it; freeing every other one and asking for 16 MiB
  // is a fragmentation OOM with fixed segments, but not with an expandable range whose
  // free tail is unmapped first
  alloc().emptyCache();
  std::vector<c10::DataPtr> blocks;
  for (int i = 0; i < 8; ++i) blocks.push_back(alloc().allocateOn(0, 8 * MiB));
  CHECK_EQ(reserved(), int64_t(64 * MiB));
  blocks.pop_back();
  blocks.pop_back();  // the last two: the range's free tail
  auto big = alloc().allocateOn(0, 16 * MiB);
  CHECK(big.get() != nullptr);
  blocks.clear();
  big.clear();
  alloc().emptyCache();
  CHECK_EQ(reserved(), int64_t(0));
}

UNIT_MAIN()
