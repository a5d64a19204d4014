#include "core/allocator/cpu_redirect.h"

#include <c10/core/CPUAllocator.h>

#include <cstring>

#include "core/allocator/caching_allocator.h"
#include "driver/driver.h"

namespace npudist::core {
namespace {

thread_local c10::DeviceIndex t_redirect = -1;

c10::Allocator* g_base = nullptr;
c10::DeleterFnPtr g_base_raw_deleter = nullptr;

void rawDelete(void* ptr) {
  if (ptr && driver::getDriver().deviceFromPtr(ptr) >= 0)
    NpuCachingAllocator::free(ptr);
  else
    g_base_raw_deleter(ptr);
}

class CpuRedirectAllocator final : public c10::Allocator {
 public:
  c10::DataPtr allocate(size_t n) override {
    if (C10_LIKELY(t_redirect < 0)) return g_base->allocate(n);
    c10::DataPtr p = npuAllocator().allocateOn(t_redirect, n);
    p.unsafe_set_device(c10::Device(c10::DeviceType::CPU));
    return p;
  }
  c10::DeleterFnPtr raw_deleter() const override { return g_base_raw_deleter ? &rawDelete : nullptr; }
  void copy_data(void* dest, const void* src, std::size_t count) const override {
    if (count) std::memcpy(dest, src, count);
  }
};

CpuRedirectAllocator g_redirect;

}  // namespace

void installCpuRedirectAllocator() {
  if (g_base) return;
  g_base = c10::GetCPUAllocator();
  g_base_raw_deleter = g_base->raw_deleter();
  // Above the default CPU allocator (priority 0), so at::empty_cpu picks it.
  c10::SetCPUAllocator(&g_redirect, /*priority=*/10);
}

c10::Allocator* cpuRedirectAllocator() { return &g_redirect; }

RedirectToNpu::RedirectToNpu(c10::DeviceIndex device) : saved_(t_redirect) { t_redirect = device; }
RedirectToNpu::~RedirectToNpu() { t_redirect = saved_; }

}  // namespace npudist::core
