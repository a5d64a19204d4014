#include "core/fault_inject.h"

#include <chrono>
#include <cstdio>
#include <mutex>
#include <set>

namespace npudist::core::fault {

std::atomic<bool> g_active{false};

namespace {

struct State {
  std::mutex mutex;  // configure() against readers of the specs' strings
  std::vector<Spec> specs;
  int rank = -1;
  std::atomic<uint64_t> collectives{0}, allocations{0};
  std::chrono::steady_clock::time_point t0;
  double store_down_after = -1;
  const Spec* store_down = nullptr;
  std::set<std::pair<const Spec*, std::string>> announced;
};

State& state() {
  static State* s = new State();  // never destroyed: hooks may run during exit
  return *s;
}

}  // namespace

void configure(std::vector<Spec> specs, int rank) {
  State& s = state();
  std::lock_guard<std::mutex> g(s.mutex);
  g_active.store(false);
  s.specs = std::move(specs);
  s.rank = rank;
  s.collectives = 0;
  s.allocations = 0;
  s.t0 = std::chrono::steady_clock::now();
  s.store_down = nullptr;
  s.store_down_after = -1;
  s.announced.clear();
  for (const Spec& sp : s.specs) {
    if (sp.kind == Kind::kStoreDown && (!s.store_down || sp.after_s < s.store_down_after)) {
      s.store_down = &sp;
      s.store_down_after = sp.after_s;
    }
  }
  g_active.store(!s.specs.empty());
}

std::vector<Spec> configured() {
  State& s = state();
  std::lock_guard<std::mutex> g(s.mutex);
  return s.specs;
}

std::pair<uint64_t, uint64_t> counts() {
  State& s = state();
  return {s.collectives.load(), s.allocations.load()};
}

CollectiveFault nextCollective() {
  State& s = state();
  CollectiveFault f;
  f.ordinal = s.collectives.fetch_add(1, std::memory_order_relaxed) + 1;
  const int64_t n = int64_t(f.ordinal);
  for (const Spec& sp : s.specs) {
    switch (sp.kind) {
      case Kind::kHang:
        if (sp.collective == n) f.hang = &sp;
        break;
      case Kind::kSlow:
        if (n % sp.every == 0) f.delay_ms += sp.delay_ms;
        break;
      default:
        break;
    }
  }
  return f;
}

const Spec* nextAllocation() {
  State& s = state();
  const int64_t n = int64_t(s.allocations.fetch_add(1, std::memory_order_relaxed) + 1);
  for (const Spec& sp : s.specs)
    if (sp.kind == Kind::kOom && sp.alloc == n) return &sp;
  return nullptr;
}

bool oomImpl(int device, size_t nbytes) {
  const Spec* sp = nextAllocation();
  if (!sp) return false;
  announce(*sp, "npu allocation #" + std::to_string(sp->alloc) + " (" + std::to_string(nbytes) +
                    " bytes on npu:" + std::to_string(device) + ") fails as out of memory");
  return true;
}

double storeDownAfter() { return state().store_down_after; }

const Spec* storeDown() {
  State& s = state();
  if (!s.store_down) return nullptr;
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - s.t0).count();
  return elapsed >= s.store_down_after ? s.store_down : nullptr;
}

void announce(const Spec& sp, const std::string& what) {
  State& s = state();
  {
    std::lock_guard<std::mutex> g(s.mutex);
    if (!s.announced.insert({&sp, what}).second) return;
  }
  std::fprintf(stderr, "[npudist fault] rank %d: %s (injected: %s)\n", s.rank, what.c_str(), sp.text.c_str());
  std::fflush(stderr);
}

}  // namespace npudist::core::fault
