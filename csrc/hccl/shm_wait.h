// Waiting on words in shared memory across processes: spin briefly, yield,
// then sleep on a futex, as docs/collectives.md describes for 2 cores and 4-8
// ranks. Publishers wake sleepers only when one has announced itself.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>

namespace npudist::hccl {

// A 32-bit word others wait on, with a count of announced sleepers, in
// shared memory. SharedWord may share its cache line with what a waiter reads
// right after the wait (segment.h: a rank's step and descriptor); WaitWord
// has its line to itself.
struct SharedWord {
  std::atomic<uint32_t> value{0};
  std::atomic<uint32_t> sleepers{0};
};
struct alignas(64) WaitWord : SharedWord {};

// Stores `v` and wakes sleepers, if any.
void publish(SharedWord& w, uint32_t v);

// Why a wait gave up.
enum class WaitResult { kReady, kTimeout, kAborted, kPeerDead };

// What a waiter checks while sleeping: a deadline (monotonic ns, 0 = none),
// an abort word (non-zero = abort), and a liveness probe of the peer it waits
// on (returns false once the peer process is gone).
struct WaitPolicy {
  int64_t deadline_ns = 0;
  const std::atomic<uint32_t>* abort_flag = nullptr;
  std::function<bool()> peer_alive;
  // The peer last ran on this waiter's CPU: it cannot arrive while we spin,
  // so the wait skips spinning and yields at once (ranks sharing a core).
  bool peer_on_my_cpu = false;
};

// Waits until `ready(word value)` holds.
WaitResult waitUntil(SharedWord& w, const std::function<bool(uint32_t)>& ready, const WaitPolicy& policy);

// Wraparound-safe "a has reached b" for step counters.
inline bool reached(uint32_t a, uint32_t b) { return int32_t(a - b) >= 0; }

// True while process `pid` exists and is not a zombie.
bool processAlive(int pid);

// How long a waiter polls before sleeping on the futex (NPUDIST_HCCL_SPIN_US,
// default 1000 µs): 5 µs of pure spinning (none when the peer shares the
// waiter's CPU), then polling with sched_yield.
int64_t spinBudgetNs();

int64_t nowNs();

// How waits ended, for benchmarks/allreduce_latency.py: counted only when a
// wait could not return at its first look (the peer not there yet), so the
// latency path pays nothing. Process-wide, relaxed counters.
struct WaitStats {
  uint64_t waits = 0;                                                   // waitUntil calls that had to wait
  uint64_t ready_spinning = 0, ready_yielding = 0, ready_sleeping = 0;  // where they ended ready
  uint64_t yields = 0, futex_sleeps = 0;
  uint64_t spin_ns = 0, yield_ns = 0, sleep_ns = 0;  // time spent in each phase (by waits that ended there)
};
WaitStats waitStats();
void resetWaitStats();

}  // namespace npudist::hccl
