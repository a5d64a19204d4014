#include "core/allocator/simple_allocator.h"

#include <array>
#include <cstring>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "core/device.h"
#include "core/npu_check.h"

namespace npudist::core {

namespace {

using c10::CachingDeviceAllocator::DeviceStats;
using c10::CachingDeviceAllocator::StatType;

constexpr size_t kMinBlock = 512;
constexpr size_t kSmallMax = size_t(1) << 20;  // 1 MiB
constexpr size_t kSegment = size_t(2) << 20;   // 2 MiB, the driver granularity
constexpr int kSmallClasses = 12;              // 512 B .. 1 MiB

struct Segment;
struct Block {
  char* ptr;
  size_t size;       // rounded
  size_t requested;  // asked for
  Segment* segment;
};

struct Segment {
  char* ptr;
  size_t size;
  driver::PhysicalHandle chunk;
  int size_class;  // -1 for a large (one-block) segment
  int live = 0;    // blocks handed out
  std::vector<std::unique_ptr<Block>> blocks;
};

size_t roundUp(size_t n, size_t m) { return (n + m - 1) / m * m; }

int smallClass(size_t n) {
  int c = 0;
  size_t s = kMinBlock;
  while (s < n) {
    s <<= 1;
    ++c;
  }
  return c;
}


struct DeviceHeap {
  std::mutex mutex;
  std::array<std::vector<Block*>, kSmallClasses> free_small;
  std::unordered_multimap<size_t, Block*> free_large;  // rounded size -> block
  std::unordered_map<void*, Block*> live;              // handed-out blocks
  std::vector<std::unique_ptr<Segment>> segments;
  DeviceStats stats;

  static size_t pool(bool small) { return small ? size_t(StatType::SMALL_POOL) : size_t(StatType::LARGE_POOL); }

  template <typename F>
  void update(c10::CachingAllocator::StatArray DeviceStats::*array, bool small, F f) {
    f((stats.*array)[size_t(StatType::AGGREGATE)]);
    f((stats.*array)[pool(small)]);
  }

  // Maps a new segment of `size` bytes; nullptr if the device is full.
  Segment* mapSegment(c10::DeviceIndex device, size_t size, int size_class, driver::Error* err) {
    driver::Driver& drv = driver::getDriver();
    driver::PhysicalHandle chunk;
    if ((*err = drv.mallocPhysical(device, size, &chunk)) != driver::Error::kSuccess) return nullptr;
    void* ptr;
    if ((*err = drv.reserveMemAddress(device, size, &ptr)) != driver::Error::kSuccess) {
      (void)drv.freePhysical(chunk);
      return nullptr;
    }
    if ((*err = drv.mapMem(ptr, size, 0, chunk)) != driver::Error::kSuccess) {
      (void)drv.releaseMemAddress(ptr);
      (void)drv.freePhysical(chunk);
      return nullptr;
    }
    auto seg = std::make_unique<Segment>();
    seg->ptr = static_cast<char*>(ptr);
    seg->size = size;
    seg->chunk = chunk;
    seg->size_class = size_class;
    update(&DeviceStats::segment, size_class >= 0, [](auto& s) { s.increase(1); });
    update(&DeviceStats::reserved_bytes, size_class >= 0, [&](auto& s) { s.increase(size); });
    stats.num_device_alloc++;
    segments.push_back(std::move(seg));
    return segments.back().get();
  }

  void unmapSegment(Segment* seg) {
    driver::Driver& drv = driver::getDriver();
    NPU_CHECK(drv.unmapMem(seg->ptr));
    NPU_CHECK(drv.releaseMemAddress(seg->ptr));
    NPU_CHECK(drv.freePhysical(seg->chunk));
    update(&DeviceStats::segment, seg->size_class >= 0, [](auto& s) { s.decrease(1); });
    update(&DeviceStats::reserved_bytes, seg->size_class >= 0, [&](auto& s) { s.decrease(seg->size); });
    stats.num_device_free++;
  }

  Block* takeCached(size_t rounded, int size_class) {
    if (size_class >= 0) {
      auto& list = free_small[size_t(size_class)];
      if (list.empty()) return nullptr;
      Block* b = list.back();
      list.pop_back();
      return b;
    }
    auto it = free_large.find(rounded);
    if (it == free_large.end()) return nullptr;
    Block* b = it->second;
    free_large.erase(it);
    return b;
  }

  Block* newBlock(c10::DeviceIndex device, size_t rounded, int size_class, driver::Error* err) {
    if (size_class < 0) {
      Segment* seg = mapSegment(device, rounded, -1, err);
      if (!seg) return nullptr;
      seg->blocks.push_back(std::make_unique<Block>(Block{seg->ptr, rounded, 0, seg}));
      return seg->blocks.back().get();
    }
    Segment* seg = mapSegment(device, kSegment, size_class, err);
    if (!seg) return nullptr;
    for (size_t off = 0; off < kSegment; off += rounded) {
      seg->blocks.push_back(std::make_unique<Block>(Block{seg->ptr + off, rounded, 0, seg}));
    }
    // Hand out the first block, cache the rest (in reverse so low addresses go first).
    auto& list = free_small[size_t(size_class)];
    for (size_t i = seg->blocks.size(); i-- > 1;) list.push_back(seg->blocks[i].get());
    return seg->blocks[0].get();
  }

  // Releases every segment with no live block. Caller holds the mutex.
  void releaseFree() {
    for (auto& list : free_small) {
      std::erase_if(list, [](Block* b) { return b->segment->live == 0; });
    }
    for (auto it = free_large.begin(); it != free_large.end();) {
      it = it->second->segment->live == 0 ? free_large.erase(it) : std::next(it);
    }
    std::vector<std::unique_ptr<Segment>> kept;
    for (auto& seg : segments) {
      if (seg->live == 0) unmapSegment(seg.get());
      else kept.push_back(std::move(seg));
    }
    segments = std::move(kept);
  }
};

std::array<DeviceHeap, kMaxDevices>& heaps() {
  static auto* h = new std::array<DeviceHeap, kMaxDevices>();  // outlives static tensors
  return *h;
}

std::string formatBytes(size_t n) {
  char buf[64];
  if (n >= (size_t(1) << 30)) snprintf(buf, sizeof buf, "%.2f GiB", double(n) / double(size_t(1) << 30));
  else if (n >= (size_t(1) << 20)) snprintf(buf, sizeof buf, "%.2f MiB", double(n) / double(size_t(1) << 20));
  else snprintf(buf, sizeof buf, "%zu bytes", n);
  return buf;
}

void rawFree(void* ptr) { SimpleNpuAllocator::free(ptr); }

}  // namespace

c10::DataPtr SimpleNpuAllocator::allocate(size_t nbytes) { return allocateOn(currentDevice(), nbytes); }

c10::DataPtr SimpleNpuAllocator::allocateOn(c10::DeviceIndex device, size_t nbytes) {
  checkDeviceIndex(device);
  c10::Device dev = npuDevice(device);
  if (nbytes == 0) return c10::DataPtr(nullptr, dev);
  bool small = nbytes <= kSmallMax;
  int size_class = small ? smallClass(nbytes) : -1;
  size_t rounded = small ? (kMinBlock << size_class) : roundUp(nbytes, kSegment);

  DeviceHeap& heap = heaps()[size_t(device)];
  std::lock_guard<std::mutex> g(heap.mutex);
  Block* b = heap.takeCached(rounded, size_class);
  driver::Error err = driver::Error::kSuccess;
  if (!b) b = heap.newBlock(device, rounded, size_class, &err);
  if (!b && (err == driver::Error::kOutOfMemory || err == driver::Error::kOutOfAddressSpace)) {
    heap.stats.num_alloc_retries++;
    heap.releaseFree();
    b = heap.newBlock(device, rounded, size_class, &err);
  }
  if (!b) {
    if (err != driver::Error::kOutOfMemory && err != driver::Error::kOutOfAddressSpace)
      throwDriverError(err, "allocating npu memory");
    heap.stats.num_ooms++;
    size_t free_b = 0, total = 0;
    NPU_CHECK(driver::getDriver().getMemInfo(device, &free_b, &total));
    const auto agg = size_t(StatType::AGGREGATE);
    TORCH_CHECK_WITH(OutOfMemoryError, false, "NPU out of memory. Tried to allocate ", formatBytes(nbytes),
                     " (npu ", int(device), "; ", formatBytes(total), " total capacity; ",
                     formatBytes(size_t(heap.stats.allocated_bytes[agg].current)), " already allocated; ",
                     formatBytes(free_b), " free; ", formatBytes(size_t(heap.stats.reserved_bytes[agg].current)),
                     " reserved in total by PyTorch; memory is mapped in 2 MiB segments). Free tensors, use "
                     "smaller batches, or raise the simulated capacity with NPUDIST_DEVICE_MEMORY.");
  }
  b->requested = nbytes;
  b->segment->live++;
  heap.live.emplace(b->ptr, b);
  heap.update(&DeviceStats::allocation, small, [](auto& s) { s.increase(1); });
  heap.update(&DeviceStats::active, small, [](auto& s) { s.increase(1); });
  heap.update(&DeviceStats::allocated_bytes, small, [&](auto& s) { s.increase(b->size); });
  heap.update(&DeviceStats::active_bytes, small, [&](auto& s) { s.increase(b->size); });
  heap.update(&DeviceStats::requested_bytes, small, [&](auto& s) { s.increase(nbytes); });
  // Context == data, so raw_allocate/raw_deallocate work too.
  return c10::DataPtr(b->ptr, b->ptr, &rawFree, dev);
}

void SimpleNpuAllocator::free(void* ptr) {
  int device = driver::getDriver().deviceFromPtr(ptr);
  TORCH_INTERNAL_ASSERT(device >= 0, "freeing a pointer that is not npu memory");
  DeviceHeap& heap = heaps()[size_t(device)];
  std::lock_guard<std::mutex> g(heap.mutex);
  auto it = heap.live.find(ptr);
  TORCH_INTERNAL_ASSERT(it != heap.live.end(), "freeing an npu pointer that is not live");
  Block* b = it->second;
  heap.live.erase(it);
  bool small = b->segment->size_class >= 0;
  b->segment->live--;
  heap.update(&DeviceStats::allocation, small, [](auto& s) { s.decrease(1); });
  heap.update(&DeviceStats::active, small, [](auto& s) { s.decrease(1); });
  heap.update(&DeviceStats::allocated_bytes, small, [&](auto& s) { s.decrease(b->size); });
  heap.update(&DeviceStats::active_bytes, small, [&](auto& s) { s.decrease(b->size); });
  heap.update(&DeviceStats::requested_bytes, small, [&](auto& s) { s.decrease(b->requested); });
  if (small) heap.free_small[size_t(b->segment->size_class)].push_back(b);
  else heap.free_large.emplace(b->size, b);
}

c10::DeleterFnPtr SimpleNpuAllocator::raw_deleter() const { return &rawFree; }

void SimpleNpuAllocator::copy_data(void* dest, const void* src, std::size_t count) const {
  if (count) std::memcpy(dest, src, count);
}

void SimpleNpuAllocator::emptyCache(c10::MempoolId_t) {
  c10::DeviceIndex n = deviceCountNoThrow();
  for (c10::DeviceIndex d = 0; d < n; ++d) {
    DeviceHeap& heap = heaps()[size_t(d)];
    std::lock_guard<std::mutex> g(heap.mutex);
    heap.releaseFree();
  }
}

void SimpleNpuAllocator::recordStream(const c10::DataPtr&, c10::Stream) {
  // See NpuGuardImpl::recordDataPtrOnStream: no cross-stream reuse tracking yet.
}

DeviceStats SimpleNpuAllocator::getDeviceStats(c10::DeviceIndex device) {
  checkDeviceIndex(device);
  DeviceHeap& heap = heaps()[size_t(device)];
  std::lock_guard<std::mutex> g(heap.mutex);
  return heap.stats;
}

void SimpleNpuAllocator::resetAccumulatedStats(c10::DeviceIndex device) {
  checkDeviceIndex(device);
  DeviceHeap& heap = heaps()[size_t(device)];
  std::lock_guard<std::mutex> g(heap.mutex);
  auto reset = [](c10::CachingAllocator::StatArray& a) {
    for (auto& s : a) s.reset_accumulated();
  };
  for (auto* a : {&heap.stats.allocation, &heap.stats.segment, &heap.stats.active, &heap.stats.allocated_bytes,
                  &heap.stats.reserved_bytes, &heap.stats.active_bytes, &heap.stats.requested_bytes})
    reset(*a);
  heap.stats.num_alloc_retries = 0;
  heap.stats.num_ooms = 0;
  heap.stats.num_device_alloc = 0;
  heap.stats.num_device_free = 0;
}

void SimpleNpuAllocator::resetPeakStats(c10::DeviceIndex device) {
  checkDeviceIndex(device);
  DeviceHeap& heap = heaps()[size_t(device)];
  std::lock_guard<std::mutex> g(heap.mutex);
  for (auto* a : {&heap.stats.allocation, &heap.stats.segment, &heap.stats.active, &heap.stats.allocated_bytes,
                  &heap.stats.reserved_bytes, &heap.stats.active_bytes, &heap.stats.requested_bytes})
    for (auto& s : *a) s.reset_peak();
}

std::pair<size_t, size_t> SimpleNpuAllocator::getMemoryInfo(c10::DeviceIndex device) {
  checkDeviceIndex(device);
  size_t free_b = 0, total = 0;
  NPU_CHECK(driver::getDriver().getMemInfo(device, &free_b, &total));
  return {free_b, total};
}

SimpleNpuAllocator& npuAllocator() {
  static SimpleNpuAllocator* a = new SimpleNpuAllocator();
  return *a;
}

}  // namespace npudist::core
