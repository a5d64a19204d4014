#include "hccl/group_stats.h"

#include <c10/util/Exception.h>

#include <algorithm>
#include <cstring>

#include "hccl/shm_wait.h"
#include "hccl/work.h"

namespace npudist::hccl {
namespace {

struct KindInfo {
  const char* name;
  const char* trace_name;
  int bus;  // 0: none, 1: factor 1, 2: (n-1)/n, 3: 2(n-1)/n
};

constexpr KindInfo kKinds[kNumOpKinds] = {
    {"all_reduce", "all_reduce", 3},
    {"all_reduce_coalesced", "allreduce_coalesced", 3},
    {"broadcast", "broadcast", 1},
    {"reduce", "reduce", 1},
    {"all_gather", "all_gather", 2},
    {"all_gather_into_tensor", "_all_gather_base", 2},
    {"all_gather_coalesced", "ALLGATHER_coalesced", 2},
    {"all_gather_into_tensor_coalesced", "all_gather_into_tensor_coalesced", 2},
    {"reduce_scatter", "reduce_scatter", 2},
    {"reduce_scatter_tensor", "_reduce_scatter_base", 2},
    {"reduce_scatter_tensor_coalesced", "reduce_scatter_tensor_coalesced", 2},
    {"all_to_all", "all_to_all", 2},
    {"all_to_all_single", "all_to_all_single", 2},
    {"gather", "gather", 2},
    {"scatter", "scatter", 2},
    {"send", "send", 1},
    {"recv", "recv", 1},
    {"barrier", "barrier", 0},
    {"coalesced", "coalesced", 0},
};
static_assert(kKinds[kCoalescedKind].name[0] == 'c' && kKinds[kCoalescedKind].name[1] == 'o',
              "kCoalescedKind must index coalesced");
static_assert(kKinds[kSendKind].bus == 1 && kKinds[kSendKind].name[0] == 's' && kKinds[kRecvKind].name[0] == 'r',
              "kSendKind/kRecvKind must index send and recv");

std::mutex g_registry_mutex;
std::vector<std::weak_ptr<GroupStats>>& registry() {
  static auto* r = new std::vector<std::weak_ptr<GroupStats>>();
  return *r;
}
std::atomic<uint64_t> g_next_pg_id{0};
std::atomic<int> g_global_rank{-1};

}  // namespace

int opKindIndex(const char* name) {
  // Callers pass string literals: remember the last one per thread.
  thread_local const char* last_name = nullptr;
  thread_local int last_kind = -1;
  if (name == last_name) return last_kind;
  int kind = -1;
  for (int i = 0; i < kNumOpKinds; ++i)
    if (std::strcmp(kKinds[i].name, name) == 0) kind = i;
  last_name = name;
  last_kind = kind;
  return kind;
}
const char* opKindName(int i) { return i >= 0 && i < kNumOpKinds ? kKinds[i].name : "unknown"; }
const char* opKindTraceName(int i) { return i >= 0 && i < kNumOpKinds ? kKinds[i].trace_name : "unknown"; }
bool opKindIsP2P(int i) { return i == kSendKind || i == kRecvKind; }

const std::string& opKindProfilingName(int i) {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v;
    for (int k = 0; k < kNumOpKinds; ++k) v.push_back(std::string("hccl:") + kKinds[k].trace_name);
    v.push_back("hccl:unknown");
    return v;
  }();
  return names[size_t(i >= 0 && i < kNumOpKinds ? i : kNumOpKinds)];
}

double busFactor(int i, int n) {
  if (i < 0 || i >= kNumOpKinds || n <= 0) return 0;
  switch (kKinds[i].bus) {
    case 1:
      return 1.0;
    case 2:
      return double(n - 1) / n;
    case 3:
      return 2.0 * (n - 1) / n;
    default:
      return 0.0;
  }
}

const std::vector<double>& latencyBounds() {
  // 1-2.5-5 steps from 1 us to 10 s, written out so the bounds print exactly.
  static const std::vector<double> bounds = {1e-6, 2.5e-6, 5e-6,   1e-5, 2.5e-5, 5e-5, 1e-4, 2.5e-4, 5e-4, 1e-3, 2.5e-3,
                                             5e-3, 1e-2,   2.5e-2, 5e-2, 0.1,    0.25, 0.5,  1.0,    2.5,  5.0,  10.0};
  return bounds;
}

GroupStats::GroupStats(std::string n, int r, int s, std::vector<int64_t> g, int64_t t)
    : name(std::move(n)), rank(r), size(s), global_ranks(std::move(g)), pg_id(g_next_pg_id++), timeout_ms(t) {
  TORCH_INTERNAL_ASSERT(latencyBounds().size() == kNumLatencyBounds);
}

std::string GroupStats::desc() {
  std::lock_guard<SpinLock> g(lock_);
  return desc_.empty() ? "undefined" : desc_;
}

void GroupStats::setDesc(const std::string& d) {
  std::string copy = d;  // allocated outside the lock
  std::lock_guard<SpinLock> g(lock_);
  desc_.swap(copy);
  has_desc_.store(true, std::memory_order_release);
}

void GroupStats::enqueue(OpState& op) {
  std::lock_guard<SpinLock> g(lock_);
  op.op_id = ++op_id_;
  if (op.kind >= 0) {
    if (op.is_p2p)
      ++p2p_seq_;
    else
      ++collective_seq_;
    op.collective_seq = collective_seq_;
    op.p2p_seq = p2p_seq_;
    ops_[size_t(op.kind)].started++;
    if (!op.is_p2p) enqueued_ = op.collective_seq;
  }
  op.in_flight_prev = last_in_flight_;
  op.in_flight_next = nullptr;
  (last_in_flight_ ? last_in_flight_->in_flight_next : first_in_flight_) = &op;
  last_in_flight_ = &op;
  op.in_flight_listed = true;
}

void GroupStats::unlink(OpState& op) {
  if (!op.in_flight_listed) return;
  (op.in_flight_prev ? op.in_flight_prev->in_flight_next : first_in_flight_) = op.in_flight_next;
  (op.in_flight_next ? op.in_flight_next->in_flight_prev : last_in_flight_) = op.in_flight_prev;
  op.in_flight_prev = op.in_flight_next = nullptr;
  op.in_flight_listed = false;
}

void GroupStats::forget(OpState& op) {
  std::lock_guard<SpinLock> g(lock_);
  unlink(op);
}

void GroupStats::onStart(OpState& op) {
  if (!op.is_p2p && op.collective_seq > started_.load(std::memory_order_relaxed)) {
    started_kind_.store(op.kind, std::memory_order_relaxed);
    started_.store(op.collective_seq, std::memory_order_release);
  }
}

void GroupStats::onFinish(OpState& op, bool failed) {
  const int64_t s = op.start_ns.load(std::memory_order_relaxed), e = op.end_ns.load(std::memory_order_relaxed);
  const double secs = s && e > s ? double(e - s) / 1e9 : 0.0;
  size_t bucket = 0;
  uint64_t bus_bytes = 0;
  if (op.kind >= 0 && !failed) {
    const auto& b = latencyBounds();
    // The first bucket whose upper bound is >= secs (the last one: above all bounds).
    bucket = size_t(std::lower_bound(b.begin(), b.end(), secs) - b.begin());
    bus_bytes = uint64_t(double(op.bytes) * busFactor(op.kind, size));
  }
  std::lock_guard<SpinLock> g(lock_);
  unlink(op);
  if (!op.is_p2p && op.collective_seq > completed_) completed_ = op.collective_seq;
  if (op.kind < 0) return;
  OpCounters& c = ops_[size_t(op.kind)];
  if (failed) {
    c.failed++;
    return;
  }
  c.completed++;
  c.bytes += uint64_t(op.bytes);
  c.bus_bytes += bus_bytes;
  c.seconds += secs;
  c.buckets[bucket]++;
}

GroupStats::Progress GroupStats::progress() {
  Progress p;
  {
    std::lock_guard<SpinLock> g(lock_);
    p.enqueued = enqueued_;
    p.completed = completed_;
  }
  // Read after `completed`: a collective starts before it completes.
  p.started = started_.load(std::memory_order_acquire);
  p.started_kind = started_kind_.load(std::memory_order_relaxed);
  return p;
}

void GroupStats::forEachInFlight(const std::function<void(OpState&)>& fn) {
  std::lock_guard<SpinLock> g(lock_);
  for (OpState* op = first_in_flight_; op; op = op->in_flight_next) fn(*op);
}

GroupStats::Snapshot GroupStats::snapshot() {
  Snapshot s;
  s.ops.resize(kNumOpKinds);
  const int64_t now = nowNs();
  {
    std::lock_guard<SpinLock> g(lock_);
    std::copy(ops_.begin(), ops_.end(), s.ops.begin());
    for (OpState* op = first_in_flight_; op; op = op->in_flight_next) {
      if (op->done.load(std::memory_order_acquire)) continue;
      s.in_flight++;
      s.oldest_in_flight_age_s = std::max(s.oldest_in_flight_age_s, double(now - op->enqueue_ns) / 1e9);
    }
  }
  s.timeouts = timeouts_.load();
  s.mismatches = mismatches_.load();
  return s;
}

void registerGroup(const std::shared_ptr<GroupStats>& g) {
  std::lock_guard<std::mutex> l(g_registry_mutex);
  auto& r = registry();
  r.erase(std::remove_if(r.begin(), r.end(), [](const auto& w) { return w.expired(); }), r.end());
  r.push_back(g);
  int expected = -1;
  g_global_rank.compare_exchange_strong(expected, g->globalRank());
}

size_t unregisterGroup(const GroupStats* g) {
  std::lock_guard<std::mutex> l(g_registry_mutex);
  auto& r = registry();
  r.erase(std::remove_if(r.begin(), r.end(),
                         [g](const auto& w) {
                           auto p = w.lock();
                           return !p || p.get() == g;
                         }),
          r.end());
  return r.size();
}

std::vector<std::shared_ptr<GroupStats>> liveGroups() {
  std::vector<std::shared_ptr<GroupStats>> out;
  std::lock_guard<std::mutex> l(g_registry_mutex);
  for (auto& w : registry())
    if (auto p = w.lock()) out.push_back(std::move(p));
  return out;
}

int processGlobalRank() { return g_global_rank.load(); }

}  // namespace npudist::hccl
