#include "hccl/shm_wait.h"
#include "util/env.h"

#include <linux/futex.h>
#include <linux/membarrier.h>
#include <pthread.h>
#include <sched.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define NPUDIST_PAUSE() _mm_pause()
#else
#define NPUDIST_PAUSE() ((void)0)
#endif

namespace npudist::hccl {
namespace {

// Shared (not private) futexes: the word is in memory mapped by several processes.
long futexWait(std::atomic<uint32_t>* addr, uint32_t expected, int64_t timeout_ns) {
  struct timespec ts;
  ts.tv_sec = timeout_ns / 1000000000;
  ts.tv_nsec = timeout_ns % 1000000000;
  return syscall(SYS_futex, reinterpret_cast<uint32_t*>(addr), FUTEX_WAIT, expected, &ts, nullptr, 0);
}

void futexWakeAll(std::atomic<uint32_t>* addr) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(addr), FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
}

struct AtomicWaitStats {
  std::atomic<uint64_t> waits{0}, ready_spinning{0}, ready_yielding{0}, ready_sleeping{0}, yields{0}, futex_sleeps{0},
      spin_ns{0}, yield_ns{0}, sleep_ns{0};
};
AtomicWaitStats g_stats;
inline void bump(std::atomic<uint64_t>& c, uint64_t v = 1) { c.fetch_add(v, std::memory_order_relaxed); }

// The publish/sleep handshake is a Dekker pattern: the publisher stores the
// value then reads `sleepers`; a waiter increments `sleepers` then reads the
// value before it sleeps. Each side needs a full fence between its store and
// its load, or both may read the old word (the publisher sees no sleeper, the
// waiter sees no new value and sleeps through the wake-up it should get).
// The publisher runs on every step of every collective, the sleeper only
// after a millisecond of yielding, so the publisher's fence is moved to the
// sleeper (an asymmetric fence): a process that registered for
// MEMBARRIER_CMD_GLOBAL_EXPEDITED lets any other process make all of its
// threads execute a full barrier (an IPI to the CPUs running them; a thread
// not running has gone through the scheduler's barrier). A sleeper issues
// that membarrier after incrementing `sleepers` and before reading the value:
// every publisher's store that precedes the barrier point in its program is
// then visible to the sleeper's read, and every publisher load that follows
// it sees the increment — so at least one side sees the other, as with two
// fences. A sleeper stays announced (and fenced once) for its whole sleep,
// re-reading the value before each slice. Publishers keep the seq_cst store
// (the fence on their side) when their process could not register (old
// kernel, seccomp); a sleeper whose membarrier call fails sleeps in short
// slices, so a missed wake-up costs at most one slice. The registration is per process image: a forked child
// starts unregistered and registers again (pthread_atfork).
std::atomic<bool> g_asymmetric{false};

bool membarrierCall(int cmd) { return syscall(SYS_membarrier, cmd, 0, 0) == 0; }

void registerAsymmetricFence() {
  g_asymmetric.store(
      membarrierCall(MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED) && membarrierCall(MEMBARRIER_CMD_GLOBAL_EXPEDITED),
      std::memory_order_release);
}

struct AsymmetricFenceInit {
  AsymmetricFenceInit() {
    registerAsymmetricFence();
    pthread_atfork(nullptr, nullptr, [] {
      g_asymmetric.store(false, std::memory_order_relaxed);
      registerAsymmetricFence();
    });
  }
};
const AsymmetricFenceInit g_fence_init;

constexpr int64_t kPureSpinNs = 5'000;
constexpr int64_t kShortSleepNs = 50'000;          // a sleeper without the asymmetric fence
constexpr int64_t kSleepSliceNs = 2'000'000;       // re-check abort and deadline this often
constexpr int64_t kLivenessPeriodNs = 50'000'000;  // probe the peer's process this often

}  // namespace

int64_t nowNs() {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

int64_t spinBudgetNs() {
  static const int64_t budget = env::getInt("NPUDIST_HCCL_SPIN_US", 1000, 0, 1'000'000) * 1000;
  return budget;
}

void publish(SharedWord& w, uint32_t v) {
  if (g_asymmetric.load(std::memory_order_relaxed)) {
    // No fence here: sleepers issue it for us (see g_asymmetric). The
    // compiler must still keep the load after the store.
    w.value.store(v, std::memory_order_release);
    std::atomic_signal_fence(std::memory_order_seq_cst);
    if (w.sleepers.load(std::memory_order_relaxed) != 0) futexWakeAll(&w.value);
    return;
  }
  w.value.store(v, std::memory_order_seq_cst);
  if (w.sleepers.load(std::memory_order_seq_cst) != 0) futexWakeAll(&w.value);
}

WaitStats waitStats() {
  WaitStats s;
  s.waits = g_stats.waits.load(std::memory_order_relaxed);
  s.ready_spinning = g_stats.ready_spinning.load(std::memory_order_relaxed);
  s.ready_yielding = g_stats.ready_yielding.load(std::memory_order_relaxed);
  s.ready_sleeping = g_stats.ready_sleeping.load(std::memory_order_relaxed);
  s.yields = g_stats.yields.load(std::memory_order_relaxed);
  s.futex_sleeps = g_stats.futex_sleeps.load(std::memory_order_relaxed);
  s.spin_ns = g_stats.spin_ns.load(std::memory_order_relaxed);
  s.yield_ns = g_stats.yield_ns.load(std::memory_order_relaxed);
  s.sleep_ns = g_stats.sleep_ns.load(std::memory_order_relaxed);
  return s;
}

void resetWaitStats() {
  for (auto* c : {&g_stats.waits, &g_stats.ready_spinning, &g_stats.ready_yielding, &g_stats.ready_sleeping,
                  &g_stats.yields, &g_stats.futex_sleeps, &g_stats.spin_ns, &g_stats.yield_ns, &g_stats.sleep_ns})
    c->store(0, std::memory_order_relaxed);
}

bool processAlive(int pid) {
  if (pid <= 0) return true;
  if (::kill(pid, 0) != 0 && errno == ESRCH) return false;
  char path[64];
  std::snprintf(path, sizeof(path), "/proc/%d/stat", pid);
  FILE* f = std::fopen(path, "r");
  if (!f) return errno != ENOENT;
  char buf[512];
  size_t n = std::fread(buf, 1, sizeof(buf) - 1, f);
  std::fclose(f);
  buf[n] = '\0';
  const char* close_paren = std::strrchr(buf, ')');  // the name may contain spaces
  if (!close_paren || close_paren[1] == '\0') return true;
  char state = close_paren[2];
  return state != 'Z' && state != 'X';
}

WaitResult waitUntil(SharedWord& w, const std::function<bool(uint32_t)>& ready, const WaitPolicy& policy) {
  auto aborted = [&] { return policy.abort_flag && policy.abort_flag->load(std::memory_order_acquire) != 0; };
  if (ready(w.value.load(std::memory_order_acquire))) return WaitResult::kReady;
  const int64_t start = nowNs();
  bump(g_stats.waits);
  // Spin briefly: a peer running on another core answers within a microsecond.
  for (int i = 0; !policy.peer_on_my_cpu; ++i) {
    NPUDIST_PAUSE();
    if (ready(w.value.load(std::memory_order_acquire))) {
      bump(g_stats.ready_spinning);
      bump(g_stats.spin_ns, uint64_t(nowNs() - start));
      return WaitResult::kReady;
    }
    if ((i & 63) == 63 && nowNs() >= start + kPureSpinNs) break;
  }
  // Then poll with sched_yield: as cheap as spinning when the core is ours,
  // and it hands the core over when the peer (or anyone) needs it.
  const int64_t yield_end = start + spinBudgetNs();
  uint64_t yields = 0;
  while (nowNs() < yield_end) {
    sched_yield();
    ++yields;
    if (ready(w.value.load(std::memory_order_acquire))) {
      bump(g_stats.ready_yielding);
      bump(g_stats.yields, yields);
      bump(g_stats.yield_ns, uint64_t(nowNs() - start));
      return WaitResult::kReady;
    }
    if (aborted()) return WaitResult::kAborted;
  }
  bump(g_stats.yields, yields);
  // Sleep on the futex in slices, checking abort, deadline and the peer's life.
  // Announced once for the whole sleep (publishers wake us from then on) and
  // fenced once: publishers that rely on our fence (g_asymmetric) execute
  // theirs now, and every slice re-reads the word after it. If the
  // membarrier fails, sleep in short slices instead.
  w.sleepers.fetch_add(1, std::memory_order_seq_cst);
  struct Unannounce {
    SharedWord& w;
    ~Unannounce() { w.sleepers.fetch_sub(1, std::memory_order_seq_cst); }
  } unannounce{w};
  const int64_t max_slice = membarrierCall(MEMBARRIER_CMD_GLOBAL_EXPEDITED) ? kSleepSliceNs : kShortSleepNs;
  int64_t next_probe = nowNs() + kLivenessPeriodNs;
  while (true) {
    uint32_t seen = w.value.load(std::memory_order_seq_cst);
    if (ready(seen)) {
      bump(g_stats.ready_sleeping);
      bump(g_stats.sleep_ns, uint64_t(nowNs() - start));
      return WaitResult::kReady;
    }
    if (aborted()) return WaitResult::kAborted;
    int64_t now = nowNs();
    if (policy.deadline_ns && now >= policy.deadline_ns) return WaitResult::kTimeout;
    if (policy.peer_alive && now >= next_probe) {
      if (!policy.peer_alive()) {
        // The peer may have finished its part just before exiting.
        return ready(w.value.load(std::memory_order_acquire)) ? WaitResult::kReady : WaitResult::kPeerDead;
      }
      next_probe = now + kLivenessPeriodNs;
    }
    int64_t slice = max_slice;
    if (policy.deadline_ns) slice = std::min(slice, std::max<int64_t>(policy.deadline_ns - now, 1000));
    bump(g_stats.futex_sleeps);
    futexWait(&w.value, seen, slice);
  }
}

}  // namespace npudist::hccl
