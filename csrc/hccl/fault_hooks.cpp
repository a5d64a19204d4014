#include "hccl/fault_hooks.h"

#include <c10/util/Exception.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <thread>

#include "hccl/engine.h"
#include "hccl/group_stats.h"
#include "hccl/work.h"

namespace npudist::hccl {

namespace fault = core::fault;

constexpr int64_t kHangMarginMs = 2000;

namespace {

int64_t monoNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// The peers of `sp` that are members of this group on another host.
std::vector<int64_t> partitionedPeers(const Engine& engine, const OpState& state, const fault::Spec& sp) {
  std::vector<int64_t> out;
  const Topology& t = engine.topo;
  for (int r = 0; r < t.size; ++r) {
    const int64_t global = state.group && !state.group->global_ranks.empty() ? state.group->global_ranks[size_t(r)] : r;
    if (std::find(sp.peers.begin(), sp.peers.end(), global) == sp.peers.end()) continue;
    if (t.host_of_rank[size_t(r)] != t.my_host) out.push_back(global);
  }
  return out;
}

// Never joins: waits until this rank's communicator is aborted (its watchdog
// does so at the timeout; ProcessGroup.abort() too) or the deadline passes.
[[noreturn]] void stall(Engine& engine, OpState& state, const std::string& what) {
  const int64_t deadline = state.start_ns.load() + int64_t(engine.effectiveTimeout().count()) * 1000000;
  while (!engine.broken() && monoNs() < deadline) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  FailureKind kind = FailureKind::kAborted;
  if (!engine.broken()) {
    kind = FailureKind::kTimeout;
    engine.abort(c10::str(what, ": timed out after ", engine.timeoutLabel()), kind);
  }
  engine.local().noteFailure(kind);
  const std::string op = state.name.rfind("hccl:", 0) == 0 ? state.name.substr(5) : state.name;
  C10_THROW_ERROR(DistBackendError, c10::str("hccl ", op, " in group '", engine.group_name, "': ", what,
                                             "; ended because ", engine.local().brokenReason()));
}

}  // namespace

void injectIssueFaultImpl(Engine& engine, const char* name) {
  if (std::strcmp(name, "coalesced") == 0) return;  // its members were counted
  const fault::CollectiveFault f = fault::nextCollective();
  if (f.delay_ms > 0) {
    for (const auto& sp : fault::configured())
      if (sp.kind == fault::Kind::kSlow)
        fault::announce(sp, c10::str("collectives start late (from #", f.ordinal, ")"));
    std::this_thread::sleep_for(std::chrono::milliseconds(f.delay_ms));
  }
  if (f.hang) {
    fault::announce(*f.hang, c10::str("this rank never joined its collective #", f.ordinal, " (", name, ")"));
    // Longer than the group's timeout, so the peers give up (and dump) first;
    // then the collective goes on as a late rank's. ProcessGroup.abort() ends it early.
    const int64_t until = monoNs() + (int64_t(engine.effectiveTimeout().count()) + kHangMarginMs) * 1000000;
    while (!engine.broken() && monoNs() < until) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

void injectRunFaultImpl(Engine& engine, OpState& state) {
  if (engine.topo.singleHost()) return;
  const auto collectives = fault::counts().first;
  for (const auto& sp : fault::configured()) {
    if (sp.kind != fault::Kind::kPartition || int64_t(collectives) < std::max<int64_t>(sp.collective, 1)) continue;
    const auto peers = partitionedPeers(engine, state, sp);
    if (peers.empty()) continue;
    const std::string what = c10::str("traffic to rank(s) ", c10::Join(", ", peers), " on another host stalls (",
                                      state.name, ", after collective #", collectives, ")");
    fault::announce(sp, "network partition from rank(s) " + c10::Join(", ", peers));
    stall(engine, state, what);
  }
}

namespace {

// A store that stops answering: what hccl sees of a rendezvous store whose
// server hangs. Forwards until the store_down fault's time.
class FaultStore : public c10d::Store {
 public:
  explicit FaultStore(c10::intrusive_ptr<c10d::Store> inner)
      : c10d::Store(inner->getTimeout()), inner_(std::move(inner)) {}

  c10::intrusive_ptr<c10d::Store> clone() override { return c10::make_intrusive<FaultStore>(inner_->clone()); }
  void set(const std::string& key, const std::vector<uint8_t>& value) override {
    down("set", key);
    inner_->set(key, value);
  }
  std::vector<uint8_t> compareSet(const std::string& key, const std::vector<uint8_t>& expected,
                                  const std::vector<uint8_t>& desired) override {
    down("compareSet", key);
    return inner_->compareSet(key, expected, desired);
  }
  std::vector<uint8_t> get(const std::string& key) override {
    down("get", key);
    return inner_->get(key);
  }
  int64_t add(const std::string& key, int64_t value) override {
    down("add", key);
    return inner_->add(key, value);
  }
  bool deleteKey(const std::string& key) override {
    down("deleteKey", key);
    return inner_->deleteKey(key);
  }
  bool check(const std::vector<std::string>& keys) override {
    down("check", keys.empty() ? std::string() : keys[0]);
    return inner_->check(keys);
  }
  int64_t getNumKeys() override {
    down("getNumKeys", "");
    return inner_->getNumKeys();
  }
  void wait(const std::vector<std::string>& keys) override {
    down("wait", keys.empty() ? std::string() : keys[0]);
    inner_->wait(keys);
  }
  void wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& timeout) override {
    down("wait", keys.empty() ? std::string() : keys[0], timeout);
    inner_->wait(keys, timeout);
  }
  void setTimeout(const std::chrono::milliseconds& timeout) override {
    c10d::Store::setTimeout(timeout);
    inner_->setTimeout(timeout);
  }

 private:
  void down(const char* op, const std::string& key, std::chrono::milliseconds timeout = std::chrono::milliseconds(-1)) {
    const fault::Spec* sp = fault::storeDown();
    if (!sp) return;
    if (timeout.count() < 0) timeout = getTimeout();
    fault::announce(*sp, "the store stopped answering");
    std::this_thread::sleep_for(timeout);
    C10_THROW_ERROR(DistStoreError, c10::str("store ", op, "('", key, "') timed out after ", timeout.count(),
                                             " ms: the store did not answer"));
  }
  c10::intrusive_ptr<c10d::Store> inner_;
};

}  // namespace

c10::intrusive_ptr<c10d::Store> storeForFaults(const c10::intrusive_ptr<c10d::Store>& store) {
  if (!fault::active() || fault::storeDownAfter() < 0 || !store) return store;
  return c10::make_intrusive<FaultStore>(store);
}

}  // namespace npudist::hccl
