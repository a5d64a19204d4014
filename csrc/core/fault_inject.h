// Fault injection (docs/fault_injection.md): the faults NPUDIST_FAULT_INJECT
// asks of this process, parsed and filtered by npudist.fault_inject (Python)
// and handed over here once. The runtime asks at a few points whether a fault
// fires: the hccl engine before each collective (hang, slow, partition), the
// caching allocator on each allocation (oom), the store hccl talks through
// (store_down). Each check is one relaxed atomic load while nothing is
// configured.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace npudist::core::fault {

enum class Kind { kHang, kKill, kSlow, kOom, kStoreDown, kPartition };

struct Spec {
  Kind kind = Kind::kHang;
  std::string text;            // the spec as written, for messages
  int64_t collective = 0;      // hang: the Nth collective; partition: from the Nth on (1 if 0)
  int64_t every = 1;           // slow: every Nth collective
  int64_t delay_ms = 0;        // slow
  int64_t alloc = 0;           // oom: the Nth npu allocation
  double after_s = 0;          // store_down: seconds after configure()
  std::vector<int64_t> peers;  // partition: global ranks
};

// Replaces the configured faults (an empty list turns injection off) and
// restarts the collective and allocation counters. `rank`: for messages.
void configure(std::vector<Spec> specs, int rank);
std::vector<Spec> configured();
// (collectives, allocations) counted since configure() (counted only while active).
std::pair<uint64_t, uint64_t> counts();

extern std::atomic<bool> g_active;
inline bool active() { return g_active.load(std::memory_order_relaxed); }

// What happens to the collective about to run.
struct CollectiveFault {
  uint64_t ordinal = 0;        // this process's collective count, from 1
  const Spec* hang = nullptr;  // never join it
  int64_t delay_ms = 0;        // start this late
};
// Counts one collective (all groups of the process, in the order they run).
CollectiveFault nextCollective();

// Counts one npu allocation; returns the oom spec that fires on it, or null.
const Spec* nextAllocation();
// The allocator's hook: true when this allocation must fail as out of memory.
bool oomImpl(int device, size_t nbytes);
inline bool injectOom(int device, size_t nbytes) { return active() && oomImpl(device, nbytes); }

// The store_down spec once its time has come, else null.
const Spec* storeDown();
// Seconds from configure() until the store goes down; < 0: it never does.
double storeDownAfter();

// Says on stderr that an injected fault fired (once per spec and what).
void announce(const Spec& s, const std::string& what);

}  // namespace npudist::core::fault
