// The npu caching allocator, on the driver's virtual-memory calls, in the
// manner of PyTorch's CUDA caching allocator and torch_npu's NPU allocator.
//
// - Blocks are cached per device and per stream in two pools: small (<= 1 MiB,
//   carved from 2 MiB segments) and large (1-10 MiB requests share 20 MiB
//   segments, larger ones get their own, rounded to 2 MiB). Requests are rounded
//   to 512 B (large ones optionally to roundup_power2_divisions steps); a
//   best-fit cached block is split, and freed blocks coalesce with free
//   neighbours.
// - expandable_segments: per stream, one large reserved address range whose
//   physical 2 MiB granules are mapped as it grows; empty_cache unmaps the
//   free tail. (Free space between live blocks stays mapped until the blocks
//   after it are freed: partial compared with CUDA, which also unmaps holes.)
// - record_stream: a block freed while recorded on other streams is reused
//   only after the work those streams had been made to wait for at the time
//   of the free has completed (driver events).
// - Limits: per_process_memory_fraction (or set_per_process_memory_fraction)
//   caps reserved memory; garbage_collection_threshold releases cached blocks
//   before the cap is reached; an allocation that fails releases every cached
//   segment and retries once, then raises torch.OutOfMemoryError.
// - Statistics with torch.cuda.memory_stats' names, a memory snapshot and a
//   trace of allocator events (memory history) for PyTorch's memory_viz.
// Configuration: PYTORCH_NPU_ALLOC_CONF (alloc_config.h).
#pragma once

#include <c10/core/CachingDeviceAllocator.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace npudist::core {

struct SnapshotBlock {
  uintptr_t address;
  size_t size, requested_size;
  std::string state;  // active_allocated | active_pending_free | inactive
  std::shared_ptr<c10::GatheredContext> context;
};
struct SnapshotSegment {
  int device;
  uintptr_t address;
  size_t total_size, allocated_size, active_size, requested_size;
  int64_t stream;
  bool small, expandable;
  std::vector<SnapshotBlock> blocks;
  c10::MempoolId_t pool_id{0, 0};  // the graph pool it belongs to, {0, 0} if none
};
struct SnapshotTrace {
  std::string action;  // alloc | free_requested | free_completed | segment_alloc | segment_free | segment_map |
                       // segment_unmap | oom
  uintptr_t address;
  size_t size;
  int64_t stream;
  int64_t time_us;
  std::shared_ptr<c10::GatheredContext> context;
};
struct Snapshot {
  std::vector<SnapshotSegment> segments;
  std::vector<std::vector<SnapshotTrace>> device_traces;  // per device
};

class NpuCachingAllocator final : public c10::DeviceAllocator {
 public:
  // Allocates on the calling thread's current npu and current stream.
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

  // Caps the bytes this process may reserve on `device` at fraction x capacity.
  void setMemoryFraction(double fraction, c10::DeviceIndex device);
  // The cap in bytes that applies now (set_per_process_memory_fraction, else
  // PYTORCH_NPU_ALLOC_CONF's per_process_memory_fraction, else the capacity).
  size_t memoryLimit(c10::DeviceIndex device);
  // Memory history: "state" keeps allocation contexts, "all" also a trace of
  // up to max_entries events; contexts hold Python frames when python_frames.
  void recordHistory(bool enabled, bool trace, size_t max_entries, bool python_frames);
  Snapshot snapshot();
  // Called (without the allocator lock) before an OutOfMemoryError is thrown.
  void setOomObserver(std::function<void(int64_t device, int64_t requested)> observer);

  // Graph pools (private pools, as CUDA's). While a stream captures into a
  // pool, allocations whose current stream is `stream` come from it.
  // begin/end pair up; begin takes a use of the pool, end drops it.
  void beginAllocateToPool(c10::DeviceIndex device, c10::StreamId stream, c10::MempoolId_t pool);
  void endAllocateToPool(c10::DeviceIndex device, c10::StreamId stream, c10::MempoolId_t pool);
  // A graph holding the pool's memory takes a use; reset() drops it. A pool
  // with no use left returns its free memory to the device.
  void retainPool(c10::DeviceIndex device, c10::MempoolId_t pool);
  void releasePool(c10::DeviceIndex device, c10::MempoolId_t pool);
  size_t poolReservedBytes(c10::DeviceIndex device, c10::MempoolId_t pool);
  // True if `ptr` starts a live block of graph pool `pool`.
  bool inPool(const void* ptr, c10::MempoolId_t pool);

  // Frees a pointer this allocator returned (the DataPtr deleter).
  static void free(void* ptr);
};

NpuCachingAllocator& npuAllocator();

}  // namespace npudist::core
