// Makes CPU kernels run by the fallback allocate in npu memory.
//
// Installed once as the process's CPU allocator (c10::SetCPUAllocator with a
// priority above the default). Outside a RedirectToNpu scope it forwards to the
// allocator it replaced, at the cost of one thread-local load per allocation;
// inside, allocations come from the npu allocator of the scope's device and
// carry a CPU device tag until the fallback retags the storage as npu.
#pragma once

#include <c10/core/Device.h>

namespace c10 {
struct Allocator;
}

namespace npudist::core {

void installCpuRedirectAllocator();

class RedirectToNpu {
 public:
  explicit RedirectToNpu(c10::DeviceIndex device);
  ~RedirectToNpu();
  RedirectToNpu(const RedirectToNpu&) = delete;
  RedirectToNpu& operator=(const RedirectToNpu&) = delete;

 private:
  c10::DeviceIndex saved_;
};

// The CPU allocator installed by installCpuRedirectAllocator (storages the
// fallback creates on CPU aliases use it so resizes stay in npu memory).
c10::Allocator* cpuRedirectAllocator();

}  // namespace npudist::core
