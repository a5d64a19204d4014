// Unit tests of csrc/driver (HostDriver) without torch: mapping, capacity,
// streams, events and frontiers, host functions, configuration parsing.
// Run by tests/cpp/test_cpp_units.py with NPUDIST_DEVICE_COUNT=2 and
// NPUDIST_DEVICE_MEMORY=64MiB (the driver reads its configuration once).
#include <atomic>
#include <chrono>
#include <cstring>
#include <mutex>
#include <thread>

#include "driver/config.h"
#include "driver/driver.h"
#include "unit.h"

using namespace npudist::driver;
namespace {
constexpr size_t MiB = size_t(1) << 20;
Driver& drv() { return getDriver(); }
}  // namespace

TEST(device_count_and_current_device) {
  int n = -1;
  REQUIRE(drv().getDeviceCount(&n) == Error::kSuccess);
  CHECK_EQ(n, 2);
  CHECK(drv().setDevice(1) == Error::kSuccess);
  int d = -1;
  CHECK(drv().getDevice(&d) == Error::kSuccess);
  CHECK_EQ(d, 1);
  CHECK(drv().setDevice(2) == Error::kInvalidDevice);
  CHECK(std::string(lastErrorMessage()).size() > 0);
  // the current device is per thread
  std::thread([&] {
    int t = -1;
    drv().getDevice(&t);
    CHECK_EQ(t, 0);
  }).join();
  drv().setDevice(0);
}

TEST(memory_size_parser) {
  size_t b = 0;
  std::string err;
  CHECK(parseMemorySize("4GiB", &b, &err));
  CHECK_EQ(b, size_t(4) << 30);
  CHECK(parseMemorySize("512M", &b, &err));
  CHECK(b == 512 * MiB || b == 512'000'000);
  CHECK(parseMemorySize("4194304", &b, &err));  // plain bytes
  CHECK_EQ(b, 4 * MiB);
  CHECK(!parseMemorySize("1MiB", &b, &err));  // below the 2 MiB granularity
  CHECK(!parseMemorySize("-4GiB", &b, &err));
  CHECK(!parseMemorySize("lots", &b, &err));
  CHECK(!err.empty());
}

TEST(reserve_map_write_read_unmap) {
  size_t g = drv().allocationGranularity();
  CHECK_EQ(g, 2 * MiB);
  void* va = nullptr;
  REQUIRE(drv().reserveMemAddress(0, 4 * g, &va) == Error::kSuccess);
  CHECK_EQ(drv().deviceFromPtr(va), 0);
  CHECK_EQ(drv().deviceFromPtr(static_cast<char*>(va) + 4 * g - 1), 0);
  int local = 0;
  CHECK_EQ(drv().deviceFromPtr(&local), -1);
  PhysicalHandle h = nullptr;
  REQUIRE(drv().mallocPhysical(0, 2 * g, &h) == Error::kSuccess);
  // map the chunk's second granule at the range's start, then its first granule after it
  REQUIRE(drv().mapMem(va, g, g, h) == Error::kSuccess);
  char* p = static_cast<char*>(va);
  REQUIRE(drv().mapMem(p + g, g, 0, h) == Error::kSuccess);
  std::memset(p, 0xAB, 2 * g);
  CHECK_EQ(static_cast<unsigned char>(p[2 * g - 1]), 0xAB);
  CHECK(drv().mapMem(p, g, 0, h) == Error::kInvalidValue);     // overlaps a mapping
  CHECK(drv().freePhysical(h) == Error::kInvalidValue);        // still mapped
  CHECK(drv().releaseMemAddress(va) == Error::kInvalidValue);  // still has mappings
  // the same physical memory mapped twice shows the same bytes
  void* va2 = nullptr;
  REQUIRE(drv().reserveMemAddress(0, g, &va2) == Error::kSuccess);
  REQUIRE(drv().mapMem(va2, g, 0, h) == Error::kSuccess);
  p[g + 5] = 42;
  CHECK_EQ(int(static_cast<char*>(va2)[5]), 42);
  // memcpy device to host reads the mapped bytes
  char out[8] = {};
  CHECK(drv().memcpy(out, p + g, sizeof out, MemcpyKind::kDeviceToHost) == Error::kSuccess);
  CHECK_EQ(int(out[5]), 42);
  CHECK(drv().unmapMem(va2) == Error::kSuccess);
  CHECK(drv().unmapMem(p + g) == Error::kSuccess);
  CHECK(drv().unmapMem(va) == Error::kSuccess);
  CHECK(drv().unmapMem(va) == Error::kInvalidHandle);
  CHECK(drv().freePhysical(h) == Error::kSuccess);
  CHECK(drv().releaseMemAddress(va) == Error::kSuccess);
  CHECK(drv().releaseMemAddress(va2) == Error::kSuccess);
}

TEST(bad_sizes_are_invalid_values) {
  void* va = nullptr;
  PhysicalHandle h = nullptr;
  CHECK(drv().reserveMemAddress(0, 0, &va) == Error::kInvalidValue);
  CHECK(drv().reserveMemAddress(0, MiB, &va) == Error::kInvalidValue);
  CHECK(drv().mallocPhysical(0, 3 * MiB, &h) == Error::kInvalidValue);
  CHECK(drv().mallocPhysical(5, 2 * MiB, &h) == Error::kInvalidDevice);
}

TEST(capacity_is_enforced_on_physical_bytes) {
  size_t free0 = 0, total = 0;
  REQUIRE(drv().getMemInfo(1, &free0, &total) == Error::kSuccess);
  CHECK_EQ(total, 64 * MiB);
  std::vector<PhysicalHandle> chunks;
  PhysicalHandle h = nullptr;
  while (drv().mallocPhysical(1, 8 * MiB, &h) == Error::kSuccess) chunks.push_back(h);
  CHECK_EQ(chunks.size(), size_t(64 / 8));
  CHECK(drv().mallocPhysical(1, 8 * MiB, &h) == Error::kOutOfMemory);
  CHECK(std::string(lastErrorMessage()).find("NPUDIST_DEVICE_MEMORY") != std::string::npos);
  size_t free1 = 1;
  drv().getMemInfo(1, &free1, &total);
  CHECK_EQ(free1, size_t(0));
  // device 0's capacity is its own
  PhysicalHandle other = nullptr;
  CHECK(drv().mallocPhysical(0, 8 * MiB, &other) == Error::kSuccess);
  CHECK(drv().freePhysical(other) == Error::kSuccess);
  for (auto c : chunks) CHECK(drv().freePhysical(c) == Error::kSuccess);
  drv().getMemInfo(1, &free1, &total);
  CHECK_EQ(free1, free0);
  // reserving address space does not use capacity (4x the capacity is reservable)
  void* va = nullptr;
  CHECK(drv().reserveMemAddress(1, 128 * MiB, &va) == Error::kSuccess);
  drv().getMemInfo(1, &free1, &total);
  CHECK_EQ(free1, free0);
  CHECK(drv().releaseMemAddress(va) == Error::kSuccess);
}

TEST(host_functions_run_in_stream_order) {
  Stream s = nullptr;
  REQUIRE(drv().createStream(0, 0, &s) == Error::kSuccess);
  std::vector<int> order;
  std::mutex mu;
  std::atomic<bool> gate{false};
  CHECK(drv().launchHostFunc(s, [&] {
    while (!gate.load()) std::this_thread::yield();
    std::lock_guard<std::mutex> g(mu);
    order.push_back(1);
  }) == Error::kSuccess);
  for (int i = 2; i <= 4; ++i)
    CHECK(drv().launchHostFunc(s, [&, i] {
      std::lock_guard<std::mutex> g(mu);
      order.push_back(i);
    }) == Error::kSuccess);
  CHECK(drv().queryStream(s) == Error::kNotReady);
  gate = true;
  CHECK(drv().synchronizeStream(s) == Error::kSuccess);
  CHECK(drv().queryStream(s) == Error::kSuccess);
  CHECK((order == std::vector<int>{1, 2, 3, 4}));
  // synchronizing an idle stream returns at once
  CHECK(drv().synchronizeStream(s) == Error::kSuccess);
  CHECK(drv().destroyStream(s) == Error::kSuccess);
}

TEST(events_snapshot_a_frontier_and_streams_wait_on_them) {
  Stream a = nullptr, b = nullptr;
  REQUIRE(drv().createStream(0, 0, &a) == Error::kSuccess);
  REQUIRE(drv().createStream(0, 0, &b) == Error::kSuccess);
  Event e = nullptr, t0 = nullptr, t1 = nullptr;
  REQUIRE(drv().createEvent(kEventDefault, &e) == Error::kSuccess);
  REQUIRE(drv().createEvent(kEventTiming, &t0) == Error::kSuccess);
  REQUIRE(drv().createEvent(kEventTiming, &t1) == Error::kSuccess);
  std::atomic<bool> gate{false};
  std::atomic<int> step{0};
  CHECK(drv().recordEvent(t0, a) == Error::kSuccess);
  CHECK(drv().launchHostFunc(a, [&] {
    while (!gate.load()) std::this_thread::yield();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    step = 1;
  }) == Error::kSuccess);
  CHECK(drv().recordEvent(e, a) == Error::kSuccess);
  CHECK(drv().recordEvent(t1, a) == Error::kSuccess);
  // work queued on `a` after the record is not part of the event
  std::atomic<bool> later_gate{false};
  CHECK(drv().launchHostFunc(a, [&] {
    while (!later_gate.load()) std::this_thread::yield();
  }) == Error::kSuccess);
  CHECK(drv().queryEvent(e) == Error::kNotReady);
  // b waits for the event: its host function sees step 1
  int seen = -1;
  CHECK(drv().streamWaitEvent(b, e) == Error::kSuccess);
  CHECK(drv().launchHostFunc(b, [&] { seen = step.load(); }) == Error::kSuccess);
  gate = true;
  CHECK(drv().synchronizeEvent(e) == Error::kSuccess);
  CHECK(drv().queryEvent(e) == Error::kSuccess);
  CHECK(drv().synchronizeStream(b) == Error::kSuccess);
  CHECK_EQ(seen, 1);
  CHECK(drv().queryStream(a) == Error::kNotReady);  // the later work still waits
  float ms = -1;
  CHECK(drv().eventElapsedTime(&ms, t0, t1) == Error::kSuccess);
  CHECK(ms >= 15.0f);
  CHECK(drv().eventElapsedTime(&ms, t0, e) == Error::kEventNotTimed);
  later_gate = true;
  CHECK(drv().synchronizeStream(a) == Error::kSuccess);
  for (Event ev : {e, t0, t1}) CHECK(drv().destroyEvent(ev) == Error::kSuccess);
  CHECK(drv().destroyStream(a) == Error::kSuccess);
  CHECK(drv().destroyStream(b) == Error::kSuccess);
}

TEST(caller_helps_runs_unstarted_work_on_the_waiting_thread) {
  // a host function nobody has started yet may run on the thread that synchronizes
  Stream s = nullptr;
  REQUIRE(drv().createStream(0, 0, &s) == Error::kSuccess);
  std::atomic<int> runs{0};
  for (int i = 0; i < 100; ++i) CHECK(drv().launchHostFunc(s, [&] { runs++; }) == Error::kSuccess);
  CHECK(drv().synchronizeStream(s) == Error::kSuccess);
  CHECK_EQ(runs.load(), 100);  // each ran exactly once, whoever ran it
  CHECK(drv().synchronizeDevice(0) == Error::kSuccess);
  CHECK(drv().destroyStream(s) == Error::kSuccess);
}

UNIT_MAIN()
