#include "hccl/shm_wait.h"
#include "util/env.h"

#include <linux/futex.h>
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

constexpr int64_t kPureSpinNs = 5'000;
constexpr int64_t kSleepSliceNs = 2'000'000;     // re-check abort and deadline this often
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
  w.value.store(v, std::memory_order_seq_cst);
  if (w.sleepers.load(std::memory_order_seq_cst) != 0) futexWakeAll(&w.value);
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
  // Spin briefly: a peer running on another core answers within a microsecond.
  for (int i = 0;; ++i) {
    NPUDIST_PAUSE();
    if (ready(w.value.load(std::memory_order_acquire))) return WaitResult::kReady;
    if ((i & 63) == 63 && nowNs() >= start + kPureSpinNs) break;
  }
  // Then poll with sched_yield: as cheap as spinning when the core is ours,
  // and it hands the core over when the peer (or anyone) needs it.
  const int64_t yield_end = start + spinBudgetNs();
  while (nowNs() < yield_end) {
    sched_yield();
    if (ready(w.value.load(std::memory_order_acquire))) return WaitResult::kReady;
    if (aborted()) return WaitResult::kAborted;
  }
  // Sleep on the futex in slices, checking abort, deadline and the peer's life.
  int64_t next_probe = nowNs() + kLivenessPeriodNs;
  while (true) {
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
    int64_t slice = kSleepSliceNs;
    if (policy.deadline_ns) slice = std::min(slice, std::max<int64_t>(policy.deadline_ns - now, 1000));
    w.sleepers.fetch_add(1, std::memory_order_seq_cst);
    uint32_t seen = w.value.load(std::memory_order_seq_cst);
    if (!ready(seen)) futexWait(&w.value, seen, slice);
    w.sleepers.fetch_sub(1, std::memory_order_seq_cst);
    if (ready(w.value.load(std::memory_order_acquire))) return WaitResult::kReady;
  }
}

}  // namespace npudist::hccl
