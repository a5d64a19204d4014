// The npu device allocator of the device core: simple, on the driver's
// virtual-memory calls, and already a c10::DeviceAllocator so that
// torch.accelerator.memory_* and torch.npu.memory_* work.
//
// Simple means: requests up to 1 MiB are rounded to a power of two (>= 512 B)
// and carved from 2 MiB segments; larger ones get a segment of their own,
// rounded to 2 MiB. Freed blocks are cached and reused for requests of the
// same rounded size; nothing is split or coalesced. empty_cache() returns
// every fully free segment to the driver; an allocation that hits the
// device's capacity empties the cache and retries once before raising
// torch.OutOfMemoryError. The caching allocator (its own issue) replaces it.
#pragma once

#include <c10/core/CachingDeviceAllocator.h>

namespace npudist::core {

class SimpleNpuAllocator final : public c10::DeviceAllocator {
 public:
  // Allocates on the calling thread's current npu.
  c10::DataPtr allocate(size_t nbytes) override;
  c10::DataPtr allocateOn(c10::DeviceIndex device, size_t nbytes);
  c10::DeleterFnPtr raw_deleter() const override;
  void copy_data(void* dest, const void* src, std::size_t count) const override;

  bool initialized() override { return true; }
  void emptyCache(c10::MempoolId_t mempool_id = {0, 0}) override;
  void recordStream(const c10::DataPtr& ptr, c10::Stream stream) override;
  c10::CachingDeviceAllocator::DeviceStats getDeviceStats(c10::DeviceIndex device) override;
  void resetAccumulatedStats(c10::DeviceIndex device) override;
  void resetPeakStats(c10::DeviceIndex device) override;
  // (free, total) physical bytes of the device, as cudaMemGetInfo.
  std::pair<size_t, size_t> getMemoryInfo(c10::DeviceIndex device) override;

  // Frees a pointer this allocator returned (the DataPtr deleter).
  static void free(void* ptr);
};

SimpleNpuAllocator& npuAllocator();

}  // namespace npudist::core
