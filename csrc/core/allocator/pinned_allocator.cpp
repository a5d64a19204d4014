#include "core/allocator/pinned_allocator.h"

#include <ATen/core/CachingHostAllocator.h>
#include <c10/core/alignment.h>

#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>

namespace npudist::core {
namespace {

std::mutex g_mutex;
std::map<uintptr_t, size_t>& live() {
  static auto* m = new std::map<uintptr_t, size_t>();  // start -> size
  return *m;
}
// Guarded by g_mutex. Nothing is cached, so active == allocated (HostStats'
// meaning: "allocations"/"allocated_bytes" count active + free blocks).
at::HostStats& stats() {
  static auto* s = new at::HostStats();
  return *s;
}

void freePinned(void* ptr) {
  if (!ptr) return;
  {
    std::lock_guard<std::mutex> g(g_mutex);
    auto it = live().find(reinterpret_cast<uintptr_t>(ptr));
    if (it != live().end()) {
      at::HostStats& st = stats();
      st.active_requests.decrease(1);
      st.allocations.decrease(1);
      st.active_bytes.decrease(it->second);
      st.allocated_bytes.decrease(it->second);
      st.num_host_free += 1;
      live().erase(it);
    }
  }
  std::free(ptr);
}

// An at::HostAllocator, so torch.accelerator's host-memory calls
// (empty_host_cache, host stats) work on npu. It caches nothing: pinned
// memory is ordinary host memory and copies complete when issued.
class PinnedHostAllocator final : public at::HostAllocator {
 public:
  c10::DataPtr allocate(size_t n) override {
    if (n == 0) return c10::DataPtr(nullptr, c10::Device(c10::DeviceType::CPU));
    void* p = nullptr;
    TORCH_CHECK_WITH(OutOfMemoryError, posix_memalign(&p, c10::gAlignment, n) == 0, "cannot allocate ", n,
                     " bytes of pinned host memory");
    {
      std::lock_guard<std::mutex> g(g_mutex);
      live()[reinterpret_cast<uintptr_t>(p)] = n;
      at::HostStats& st = stats();
      st.active_requests.increase(1);
      st.allocations.increase(1);
      st.active_bytes.increase(n);
      st.allocated_bytes.increase(n);
      st.num_host_alloc += 1;
    }
    return c10::DataPtr(p, p, &freePinned, c10::Device(c10::DeviceType::CPU));
  }
  c10::DeleterFnPtr raw_deleter() const override { return &freePinned; }
  void copy_data(void* dest, const void* src, std::size_t count) const override {
    if (count) std::memcpy(dest, src, count);
  }
  bool record_event(void*, void*, c10::Stream) override { return true; }  // nothing to wait for
  void empty_cache() override {}
  at::HostStats get_stats() override {
    std::lock_guard<std::mutex> g(g_mutex);
    return stats();
  }
  void reset_accumulated_stats() override {
    std::lock_guard<std::mutex> g(g_mutex);
    at::HostStats& st = stats();
    for (auto* s : {&st.active_requests, &st.active_bytes, &st.allocations, &st.allocated_bytes})
      s->reset_accumulated();
    st.num_host_alloc = st.num_host_free = 0;
  }
  void reset_peak_stats() override {
    std::lock_guard<std::mutex> g(g_mutex);
    at::HostStats& st = stats();
    for (auto* s : {&st.active_requests, &st.active_bytes, &st.allocations, &st.allocated_bytes}) s->reset_peak();
  }
};

}  // namespace

c10::Allocator* pinnedHostAllocator() {
  static PinnedHostAllocator a;
  return &a;
}

namespace {
struct HostAllocatorRegistrar {
  HostAllocatorRegistrar() {
    at::setHostAllocator(c10::DeviceType::PrivateUse1, static_cast<PinnedHostAllocator*>(pinnedHostAllocator()));
  }
} host_allocator_registrar;
}  // namespace

bool isPinnedHostPtr(const void* ptr) {
  auto p = reinterpret_cast<uintptr_t>(ptr);
  std::lock_guard<std::mutex> g(g_mutex);
  auto it = live().upper_bound(p);
  if (it == live().begin()) return false;
  --it;
  return p >= it->first && p < it->first + it->second;
}

}  // namespace npudist::core
