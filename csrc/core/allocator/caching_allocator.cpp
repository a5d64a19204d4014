#include "core/allocator/caching_allocator.h"

#include <array>
#include <atomic>
#include <mutex>
#include <vector>

#include "core/allocator/device_cache.h"
#include "core/device.h"

namespace npudist::core {
namespace {

using namespace allocator_detail;

// One cache per device, created on first use and never destroyed (tensors may
// be freed during interpreter exit). Lock-free to read.
std::array<std::atomic<DeviceCache*>, kMaxDevices>& caches() {
  static auto* c = new std::array<std::atomic<DeviceCache*>, kMaxDevices>();
  return *c;
}
std::mutex g_caches_mutex;

// The cache of `device`, or nullptr if nothing was allocated there yet.
DeviceCache* existingCache(int device) { return caches()[size_t(device)].load(std::memory_order_acquire); }

DeviceCache& cacheOf(c10::DeviceIndex device) {
  checkDeviceIndex(device);
  if (DeviceCache* c = existingCache(device)) return *c;
  std::lock_guard<std::mutex> g(g_caches_mutex);
  if (DeviceCache* c = existingCache(device)) return *c;
  auto* c = new DeviceCache(device);
  caches()[size_t(device)].store(c, std::memory_order_release);
  return *c;
}

std::vector<DeviceCache*> existingCaches() {
  std::vector<DeviceCache*> out;
  for (int d = 0; d < kMaxDevices; ++d)
    if (DeviceCache* c = existingCache(d)) out.push_back(c);
  return out;
}

void rawFree(void* ptr) { NpuCachingAllocator::free(ptr); }

}  // namespace

c10::DataPtr NpuCachingAllocator::allocate(size_t nbytes) { return allocateOn(currentDevice(), nbytes); }

c10::DataPtr NpuCachingAllocator::allocateOn(c10::DeviceIndex device, size_t nbytes) {
  DeviceCache& cache = cacheOf(device);
  c10::Device dev = npuDevice(device);
  if (nbytes == 0) return c10::DataPtr(nullptr, dev);
  c10::StreamId stream = currentStreamId(device);
  auto ctx = gatherContext();  // before the lock: it may take the GIL
  std::string oom;
  {
    std::lock_guard<std::mutex> g(cache.mutex);
    if (!fault::injectOom(device, nbytes))  // docs/fault_injection.md
      if (Block* b = cache.malloc(nbytes, stream, std::move(ctx))) return c10::DataPtr(b->ptr, b->ptr, &rawFree, dev);
    oom = cache.oomMessage(nbytes);
  }
  if (oomObserver()) oomObserver()(device, int64_t(nbytes));
  TORCH_CHECK_WITH(OutOfMemoryError, false, oom);
}

void NpuCachingAllocator::free(void* ptr) {
  int device = driver::getDriver().deviceFromPtr(ptr);
  TORCH_INTERNAL_ASSERT(device >= 0, "freeing a pointer that is not npu memory");
  // A deleter: no device checks that could throw (it also runs in a forked
  // child at exit, where npu use is refused but freeing is harmless).
  DeviceCache* c = existingCache(device);
  TORCH_INTERNAL_ASSERT(c, "freeing npu memory of a device without an allocator");
  DeviceCache& cache = *c;
  std::lock_guard<std::mutex> g(cache.mutex);
  Block* b = cache.find(ptr);
  TORCH_INTERNAL_ASSERT(b, "freeing an npu pointer that is not live");
  cache.forget(ptr);
  cache.free(b);
}

c10::DeleterFnPtr NpuCachingAllocator::raw_deleter() const { return &rawFree; }

void NpuCachingAllocator::copy_data(void* dest, const void* src, std::size_t count) const {
  if (count) std::memcpy(dest, src, count);
}

void NpuCachingAllocator::emptyCache(c10::MempoolId_t) {
  graph::checkUnsafeCall("torch.npu.empty_cache()");
  for (DeviceCache* c : existingCaches()) {
    std::lock_guard<std::mutex> g(c->mutex);
    c->releaseCached();
  }
}

void NpuCachingAllocator::recordStream(const c10::DataPtr& ptr, c10::Stream stream) {
  if (!ptr.get()) return;
  TORCH_CHECK(ptr.get_deleter() == &rawFree, "record_stream: the tensor's memory does not come from the npu allocator");
  int device = driver::getDriver().deviceFromPtr(ptr.get());
  DeviceCache& cache = cacheOf(c10::DeviceIndex(device));
  std::lock_guard<std::mutex> g(cache.mutex);
  Block* b = cache.find(ptr.get());
  TORCH_CHECK(b, "record_stream: the tensor's memory was already freed");
  cache.recordStream(b, stream);
}

c10::CachingDeviceAllocator::DeviceStats NpuCachingAllocator::getDeviceStats(c10::DeviceIndex device) {
  DeviceCache& cache = cacheOf(device);
  std::lock_guard<std::mutex> g(cache.mutex);
  return cache.stats();
}

void NpuCachingAllocator::resetAccumulatedStats(c10::DeviceIndex device) {
  DeviceCache& cache = cacheOf(device);
  std::lock_guard<std::mutex> g(cache.mutex);
  cache.resetAccumulated();
}

void NpuCachingAllocator::resetPeakStats(c10::DeviceIndex device) {
  DeviceCache& cache = cacheOf(device);
  std::lock_guard<std::mutex> g(cache.mutex);
  cache.resetPeaks();
}

std::pair<size_t, size_t> NpuCachingAllocator::getMemoryInfo(c10::DeviceIndex device) {
  checkDeviceIndex(device);
  size_t free_b = 0, total = 0;
  NPU_CHECK(driver::getDriver().getMemInfo(device, &free_b, &total));
  return {free_b, total};
}

void NpuCachingAllocator::setMemoryFraction(double fraction, c10::DeviceIndex device) {
  TORCH_CHECK_VALUE(fraction > 0 && fraction <= 1, "set_per_process_memory_fraction: fraction must be in (0, 1], got ",
                    fraction);
  DeviceCache& cache = cacheOf(device);
  std::lock_guard<std::mutex> g(cache.mutex);
  cache.setFraction(fraction);
}

size_t NpuCachingAllocator::memoryLimit(c10::DeviceIndex device) {
  DeviceCache& cache = cacheOf(device);
  std::lock_guard<std::mutex> g(cache.mutex);
  return cache.currentLimit();
}

void NpuCachingAllocator::recordHistory(bool enabled, bool trace, size_t max_entries, bool python_frames) {
  HistoryConfig& h = history();
  for (DeviceCache* c : existingCaches()) {
    std::lock_guard<std::mutex> g(c->mutex);
    if (!enabled) c->clearTrace();
  }
  h.trace = trace;
  h.max_entries = max_entries;
  h.python = python_frames;
  h.enabled.store(enabled);
}

Snapshot NpuCachingAllocator::snapshot() {
  Snapshot out;
  out.device_traces.resize(size_t(deviceCountNoThrow()));
  for (DeviceCache* c : existingCaches()) {
    std::lock_guard<std::mutex> g(c->mutex);
    c->snapshot(out);
  }
  return out;
}

void NpuCachingAllocator::setOomObserver(std::function<void(int64_t, int64_t)> observer) {
  oomObserver() = std::move(observer);
}

void NpuCachingAllocator::beginAllocateToPool(c10::DeviceIndex device, c10::StreamId stream, c10::MempoolId_t pool) {
  DeviceCache& cache = cacheOf(device);
  std::lock_guard<std::mutex> g(cache.mutex);
  cache.routeToPool(stream, pool);
}

void NpuCachingAllocator::endAllocateToPool(c10::DeviceIndex device, c10::StreamId stream, c10::MempoolId_t pool) {
  DeviceCache& cache = cacheOf(device);
  std::lock_guard<std::mutex> g(cache.mutex);
  cache.unroute(stream);
  cache.releasePool(pool);
}

void NpuCachingAllocator::retainPool(c10::DeviceIndex device, c10::MempoolId_t pool) {
  DeviceCache& cache = cacheOf(device);
  std::lock_guard<std::mutex> g(cache.mutex);
  cache.retainPool(pool);
}

void NpuCachingAllocator::releasePool(c10::DeviceIndex device, c10::MempoolId_t pool) {
  DeviceCache* c = existingCache(device);
  if (!c) return;
  std::lock_guard<std::mutex> g(c->mutex);
  c->releasePool(pool);
}

size_t NpuCachingAllocator::poolReservedBytes(c10::DeviceIndex device, c10::MempoolId_t pool) {
  DeviceCache& cache = cacheOf(device);
  std::lock_guard<std::mutex> g(cache.mutex);
  return cache.poolReserved(pool);
}

bool NpuCachingAllocator::inPool(const void* ptr, c10::MempoolId_t pool) {
  int device = driver::getDriver().deviceFromPtr(ptr);
  if (device < 0) return false;
  DeviceCache* c = existingCache(device);
  if (!c) return false;
  std::lock_guard<std::mutex> g(c->mutex);
  return c->inPool(const_cast<void*>(ptr), pool);
}

NpuCachingAllocator& npuAllocator() {
  static auto* a = new NpuCachingAllocator();
  return *a;
}

}  // namespace npudist::core
