// npu allocations and frees to torch.profiler (profile_memory=True), the way
// c10's allocators report them: c10::reportMemoryUsageToProfiler with the
// allocator's allocated and reserved totals after the change. One thread-local
// lookup when no profiler records memory.
#pragma once

#include <cstddef>
#include <cstdint>

namespace npudist::profiler {

// delta > 0: `ptr` was allocated; < 0: freed. Totals in bytes, of `device`.
void reportNpuMemory(void* ptr, int64_t delta, size_t allocated, size_t reserved, int device);

}  // namespace npudist::profiler
