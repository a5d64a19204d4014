// A lock for the short critical sections of the per-collective bookkeeping
// (group counters and collectives in flight, flight-recorder ring). Taking it
// uncontended is one atomic exchange and releasing it a plain store, where
// std::mutex costs two atomic read-modify-writes (its unlock must learn
// whether to wake a waiter). Waiters spin briefly, then yield, then sleep in
// short naps: the holder may have lost its core on a loaded 2-core machine.
// Hold it only for a few hundred nanoseconds, and never across a call that
// may block.
#pragma once

#include <atomic>
#include <sched.h>
#include <time.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace npudist::hccl {

class SpinLock {
 public:
  void lock() noexcept {
    if (!flag_.exchange(true, std::memory_order_acquire)) return;
    lockSlow();
  }
  bool try_lock() noexcept {
    return !flag_.load(std::memory_order_relaxed) && !flag_.exchange(true, std::memory_order_acquire);
  }
  void unlock() noexcept { flag_.store(false, std::memory_order_release); }

 private:
  void lockSlow() noexcept {
    for (int round = 0;; ++round) {
      while (flag_.load(std::memory_order_relaxed)) {
        if (round < 64) {
#if defined(__x86_64__) || defined(__i386__)
          _mm_pause();
#endif
          ++round;
        } else if (round < 1064) {
          sched_yield();
          ++round;
        } else {
          const timespec nap{0, 50'000};  // 50 us
          nanosleep(&nap, nullptr);
        }
      }
      if (!flag_.exchange(true, std::memory_order_acquire)) return;
    }
  }
  std::atomic<bool> flag_{false};
};

}  // namespace npudist::hccl
