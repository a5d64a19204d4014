#include "profiler/memory_events.h"

#include <c10/core/Allocator.h>
#include <c10/core/Device.h>

namespace npudist::profiler {

void reportNpuMemory(void* ptr, int64_t delta, size_t allocated, size_t reserved, int device) {
  if (!c10::memoryProfilingEnabled()) return;
  c10::reportMemoryUsageToProfiler(ptr, delta, allocated, reserved,
                                   c10::Device(c10::DeviceType::PrivateUse1, c10::DeviceIndex(device)));
}

}  // namespace npudist::profiler
