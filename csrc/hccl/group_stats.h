// Per-group bookkeeping of the hccl backend: counters and a latency
// histogram per collective, the collectives in flight, progress (last
// enqueued / started / completed sequence number) and failure counts. Kept
// in C++ and updated per collective; Python reads a snapshot only when a
// metrics endpoint is scraped (npudist._C._hccl_stats, docs/metrics.md).
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "hccl/spin_lock.h"

namespace npudist::hccl {

class Engine;
struct OpState;

// The collectives, as named by ProcessGroupHCCL::submit.
constexpr int kNumOpKinds = 19;
int opKindIndex(const char* name);                                  // -1 if unknown
constexpr int kSendKind = 15, kRecvKind = 16, kCoalescedKind = 18;  // their indices (checked in group_stats.cpp)
// "hccl:" + opKindTraceName(index).
const std::string& opKindProfilingName(int index);
const char* opKindName(int index);
// What PyTorch's flight recorder calls it (torchfrtrace's vocabulary).
const char* opKindTraceName(int index);
// nccl-tests' bus-bandwidth factor for a group of n ranks.
double busFactor(int index, int n);
bool opKindIsP2P(int index);

// Upper bounds of the latency histogram buckets, seconds (1 us .. 10 s).
constexpr size_t kNumLatencyBounds = 22;
const std::vector<double>& latencyBounds();

struct OpCounters {
  uint64_t started = 0, completed = 0, failed = 0;
  uint64_t bytes = 0, bus_bytes = 0;
  double seconds = 0;
  std::array<uint64_t, kNumLatencyBounds + 1> buckets{};  // non-cumulative; the last: above every bound
};

class GroupStats {
 public:
  GroupStats(std::string name, int rank, int size, std::vector<int64_t> global_ranks, int64_t timeout_ms);

  const std::string name;
  const int rank, size;
  const std::vector<int64_t> global_ranks;  // group rank -> global rank
  const uint64_t pg_id;                     // creation order in this process
  std::atomic<int64_t> timeout_ms;
  std::weak_ptr<Engine> engine;

  std::string desc();
  void setDesc(const std::string& d);
  bool hasDesc() const { return has_desc_.load(std::memory_order_acquire); }
  int globalRank() const { return global_ranks.empty() ? rank : int(global_ranks[size_t(rank)]); }

  // Numbers `op` (its collective_seq, p2p_seq, op_id: collectives and
  // point-to-point ops are numbered apart, as PyTorch's collective_seq_id /
  // p2p_seq_id; op_id counts both), counts it and puts it in flight, under
  // one lock. op.kind -1 (a coalesced batch's wrapper): only op_id advances.
  // op.enqueue_ns must be set: the watchdog may look at it from now on.
  // The collectives in flight are a list through the OpStates themselves (no
  // allocation, no reference counts): an OpState leaves it when it finishes
  // (onFinish) or, if it never ran, when it is destroyed (forget).
  void enqueue(OpState& op);
  // Lock-free: collectives of a group start in issue order, on one thread at a time.
  void onStart(OpState& op);
  void onFinish(OpState& op, bool failed);
  void forget(OpState& op);
  void countTimeout() { timeouts_.fetch_add(1, std::memory_order_relaxed); }
  void countMismatch() { mismatches_.fetch_add(1, std::memory_order_relaxed); }

  struct Progress {
    uint64_t enqueued = 0, started = 0, completed = 0;
    int started_kind = -1;  // op kind of `started`
  };
  Progress progress();

  // Calls `fn` on each collective issued and not finished, in issue order,
  // under the group's lock (they cannot be destroyed meanwhile): `fn` must
  // be quick and must not call into this group or block.
  void forEachInFlight(const std::function<void(OpState&)>& fn);

  struct Snapshot {
    std::vector<OpCounters> ops;  // by op kind
    uint64_t in_flight = 0;
    double oldest_in_flight_age_s = 0;
    uint64_t timeouts = 0, mismatches = 0;
  };
  Snapshot snapshot();

 private:
  void unlink(OpState& op);  // lock held
  SpinLock lock_;            // everything below but the atomics
  std::string desc_;
  std::atomic<bool> has_desc_{false};
  uint64_t collective_seq_ = 0, p2p_seq_ = 0, op_id_ = 0;
  uint64_t enqueued_ = 0, completed_ = 0;
  // Written by whoever starts the group's collectives (one at a time): kind
  // first, then the sequence number (release), so a reader that sees k sees
  // k's kind or a later one.
  std::atomic<uint64_t> started_{0};
  std::atomic<int> started_kind_{-1};
  std::array<OpCounters, kNumOpKinds> ops_{};
  OpState* first_in_flight_ = nullptr;  // the oldest; OpState::in_flight_next/prev link them
  OpState* last_in_flight_ = nullptr;
  std::atomic<uint64_t> timeouts_{0}, mismatches_{0};
};

// Registers a group for snapshots, flight-recorder dumps and the watchdog.
void registerGroup(const std::shared_ptr<GroupStats>& g);
// Forgets a group that was shut down; returns how many live groups remain.
size_t unregisterGroup(const GroupStats* g);
// The groups still alive in this process, in creation order.
std::vector<std::shared_ptr<GroupStats>> liveGroups();
// This process's global rank (from the first group made), or -1.
int processGlobalRank();

}  // namespace npudist::hccl
