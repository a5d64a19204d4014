#include "hccl/engine.h"

#include <c10/util/Exception.h>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <mutex>
#include <numeric>

#include "core/aten/cpu_alias.h"
#include "util/env.h"

namespace npudist::hccl {
namespace {

// Readers per unit (docs/env_vars.md): the variable is a whole number of seconds, MiB or bytes,
// bounded in that unit; the reader returns it as the quantity the engine uses.
std::chrono::milliseconds envSeconds(const char* name, int64_t def, int64_t lo, int64_t hi) {
  return std::chrono::seconds(env::getInt(name, def, lo, hi));
}

size_t envMiB(const char* name, int64_t def, int64_t lo, int64_t hi) {
  return size_t(env::getInt(name, def, lo, hi)) << 20;
}

size_t envBytes(const char* name, int64_t def, int64_t lo, int64_t hi) {
  return size_t(env::getInt(name, def, lo, hi));
}

std::vector<uint8_t> bytesOf(const std::string& s) { return std::vector<uint8_t>(s.begin(), s.end()); }

}  // namespace

std::chrono::milliseconds connectTimeout() { return envSeconds("HCCL_CONNECT_TIMEOUT", 120, 1, 7 * 24 * 3600); }

size_t stagingSlotBytes() { return envMiB("HCCL_BUFFSIZE", 8, 1, 4096) / 2; }  // two slots share it

size_t oneshotBytes() { return envBytes("NPUDIST_HCCL_ONESHOT_BYTES", 65536, 0, 1 << 26); }

std::chrono::milliseconds execTimeout() {
  static const auto t = envSeconds("HCCL_EXEC_TIMEOUT", 0, 0, 7 * 24 * 3600);
  return t;
}

int nextIncarnation(const std::string& group_name) {
  static std::mutex mutex;
  static std::map<std::string, int> counts;
  std::lock_guard<std::mutex> g(mutex);
  return counts[group_name]++;
}

int Topology::localIndexOf(int group_rank) const {
  auto it = std::lower_bound(local_ranks.begin(), local_ranks.end(), group_rank);
  return it != local_ranks.end() && *it == group_rank ? int(it - local_ranks.begin()) : -1;
}

Engine::Engine(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size, const std::string& name,
               std::chrono::milliseconds op_timeout, const GlooFactory& gloo_factory)
    : group_name(name), timeout(op_timeout) {
  const auto connect = connectTimeout();
  // A group name comes back after destroy_process_group + init_process_group
  // while the store (an agent's) lives on: every incarnation has its own keys.
  // An elastic restart that reuses the agent's store (TORCHELASTIC_USE_AGENT_STORE=True)
  // starts fresh processes whose counters start again at 0: the attempt number
  // keeps their keys apart. Each agent counts its own attempts (one restarted for
  // another node's failure does not count it), so where rank 0 of each round
  // hosts a fresh store (npurun's default) the attempt must stay out of the keys.
  const bool agent_store = env::getString("TORCHELASTIC_USE_AGENT_STORE", "") == "True";
  const std::string attempt = agent_store ? env::getString("TORCHELASTIC_RESTART_COUNT", "0") : "0";
  const std::string prefix = "hccl/" + attempt + "." + std::to_string(nextIncarnation(name)) + "/";
  topo.rank = rank;
  topo.size = size;
  // Locality is decided per group from the hosts its ranks report.
  const std::string me = hostIdentity();
  store->set(prefix + "host/" + std::to_string(rank), bytesOf(me));
  std::vector<std::string> keys;
  for (int r = 0; r < size; ++r) keys.push_back(prefix + "host/" + std::to_string(r));
  try {
    store->wait(keys, connect);
  } catch (const std::exception& e) {
    std::vector<int> missing;
    for (int r = 0; r < size; ++r)
      if (!store->check({keys[size_t(r)]})) missing.push_back(r);
    C10_THROW_ERROR(DistBackendError,
                    c10::str("hccl: setting up group '", name, "' timed out after ", connect.count() / 1000,
                             " s (HCCL_CONNECT_TIMEOUT): ranks ", c10::Join(", ", missing),
                             " never joined (did every rank of the group call init_process_group/new_group?)"));
  }
  std::map<std::string, int> host_index;
  topo.host_of_rank.resize(size_t(size));
  for (int r = 0; r < size; ++r) {
    auto v = store->get(keys[size_t(r)]);
    std::string h(v.begin(), v.end());
    auto it = host_index.find(h);
    if (it == host_index.end()) {
      it = host_index.emplace(h, int(topo.hosts.size())).first;
      topo.hosts.push_back(h);
      topo.leaders.push_back(r);
    }
    topo.host_of_rank[size_t(r)] = it->second;
  }
  topo.my_host = topo.host_of_rank[size_t(rank)];
  for (int r = 0; r < size; ++r)
    if (topo.host_of_rank[size_t(r)] == topo.my_host) topo.local_ranks.push_back(r);
  topo.my_local = topo.localIndexOf(rank);

  LocalCommConfig cfg;
  cfg.group_name = name;
  cfg.group_ranks = topo.local_ranks;
  cfg.my_index = topo.my_local;
  cfg.host = me;
  cfg.slot_bytes = stagingSlotBytes();
  cfg.oneshot_bytes = std::min(oneshotBytes(), cfg.slot_bytes);
  cfg.connect_timeout = connect;
  local_ = std::make_unique<LocalComm>(store, prefix + "local/" + std::to_string(topo.my_host), cfg);
  local_->setTimeoutLabel(timeoutLabel());

  if (!topo.singleHost()) {
    TORCH_CHECK(gloo_factory, "hccl: group '", name, "' spans ", topo.hosts.size(),
                " hosts but no Gloo factory was given (create hccl groups through torch.distributed)");
    gloo_all_ =
        gloo_factory(c10::make_intrusive<c10d::PrefixStore>(prefix + "gloo_all", store), rank, size, op_timeout);
    if (topo.leaders[size_t(topo.my_host)] == rank) {
      gloo_leaders_ = gloo_factory(c10::make_intrusive<c10d::PrefixStore>(prefix + "gloo_leaders", store), topo.my_host,
                                   int(topo.hosts.size()), op_timeout);
    }
  }
}

std::chrono::milliseconds Engine::effectiveTimeout() const {
  const auto exec = execTimeout();
  return exec.count() > 0 && exec < timeout ? exec : timeout;
}

std::string Engine::timeoutLabel() const {
  const auto exec = execTimeout();
  if (exec.count() > 0 && exec < timeout) return c10::str("HCCL_EXEC_TIMEOUT, ", exec.count() / 1000.0, " s");
  return c10::str("the group's timeout, ", timeout.count() / 1000.0, " s");
}

void Engine::setTimeout(std::chrono::milliseconds t) {
  timeout = t;
  local_->setTimeoutLabel(timeoutLabel());
}

int64_t Engine::deadline() const {
  // Same clock: core::monotonicNs and nowNs both read CLOCK_MONOTONIC.
  return (op_start_ns ? op_start_ns : nowNs()) + int64_t(effectiveTimeout().count()) * 1000000;
}

void Engine::abort(const std::string& why, FailureKind kind) {
  local_->abort(why, kind);
  if (gloo_all_) gloo_all_->abort();
  if (gloo_leaders_) gloo_leaders_->abort();
}

void Engine::glooWait(const c10::intrusive_ptr<c10d::Work>& w) {
  if (!w) return;
  try {
    w->wait(effectiveTimeout());
  } catch (const std::exception& e) {
    // Gloo says "Timed out waiting ..." when a peer host never joined.
    const std::string m = e.what();
    const bool timeout = m.find("imed out") != std::string::npos || m.find("imeout") != std::string::npos;
    local_->noteFailure(timeout ? FailureKind::kTimeout : FailureKind::kOther);
    const std::string lost = timeout ? std::string() : describeLostHost(topo, m);
    if (lost.empty()) throw;
    C10_THROW_ERROR(DistBackendError, c10::str("hccl group '", group_name, "': ", lost, ". Gloo said: ", m));
  }
}

at::Tensor asCpu(const at::Tensor& t) { return t.is_cpu() ? t : core::aliasAsCpu(t); }

c10d::ReduceOp glooOp(RedOp op, bool is_bool) {
  switch (op) {
    case RedOp::kProduct:
      return is_bool ? c10d::ReduceOp::MIN : c10d::ReduceOp::PRODUCT;
    case RedOp::kMin:
      return c10d::ReduceOp::MIN;
    case RedOp::kMax:
      return c10d::ReduceOp::MAX;
    default:
      return is_bool ? c10d::ReduceOp::MAX : c10d::ReduceOp::SUM;  // AVG/PREMUL: SUM, then scaled here
  }
}

namespace {
// Data-movement collectives go through Gloo as bytes: Gloo lacks some dtypes (int16).
at::Tensor asCpuBytes(const at::Tensor& t) { return asCpu(t).reshape({-1}).view(at::kByte); }
std::vector<at::Tensor> asCpuBytes(const std::vector<at::Tensor>& ts) {
  std::vector<at::Tensor> out;
  for (const auto& t : ts) out.push_back(asCpuBytes(t));
  return out;
}
void* ptr(const at::Tensor& t) { return t.data_ptr(); }
}  // namespace

// Gloo reduces float16/bfloat16/float/double/int8/uint8/int32/int64; int16
// travels as int32 (same wrap-around once narrowed back), bool as uint8.
at::ScalarType glooReductionDtype(at::ScalarType t) {
  if (t == at::kShort) return at::kInt;
  if (t == at::kBool) return at::kByte;
  return t;
}

namespace {
DType dt(const at::Tensor& t) { return toDType(t.scalar_type()); }
}  // namespace

void Engine::announceInvalid(Op op, const std::string& reason) {
  if (!topo.singleHost()) return;  // peers on other hosts time out instead (docs/collectives.md)
  Invalid bad{reason};
  try {
    switch (op) {
      case Op::kBroadcast:
        local_->broadcast(nullptr, 0, DType::kUInt8, 0, deadline(), bad);
        break;
      case Op::kAllreduce:
        local_->allreduce(nullptr, nullptr, 0, DType::kUInt8, RedOp::kSum, 1.0, deadline(), bad);
        break;
      default:
        local_->barrier(deadline(), bad);
        break;
    }
  } catch (const std::exception&) {
    // Expected: our own flagged descriptor fails the collective everywhere.
  }
}

void Engine::barrier(const Invalid& bad) {
  if (topo.singleHost()) return local_->barrier(deadline(), bad);
  glooWait(gloo_all_->barrier(c10d::BarrierOptions()));
}

void Engine::broadcast(at::Tensor& t, int root) {
  if (topo.singleHost()) return local_->broadcast(ptr(t), t.numel(), dt(t), root, deadline());
  hierBroadcast(t, root);
}

void Engine::allreduce(at::Tensor& t, RedOp op, double premul) {
  if (topo.singleHost()) return local_->allreduce(ptr(t), ptr(t), t.numel(), dt(t), op, premul, deadline());
  hierAllreduce(t, op, premul);
}

void Engine::reduce(at::Tensor& t, RedOp op, double premul, int root) {
  if (topo.singleHost()) return local_->reduce(ptr(t), ptr(t), t.numel(), dt(t), op, premul, root, deadline());
  // Across hosts: all-reduce a copy and keep the root's result (reduce is rare off the hot path).
  at::Tensor tmp = t.clone();
  hierAllreduce(tmp, op, premul);
  if (topo.rank == root) t.copy_(tmp);
}

void Engine::allgather(const at::Tensor& in, std::vector<at::Tensor>& outs) {
  if (topo.singleHost()) {
    std::vector<void*> p;
    for (auto& o : outs) p.push_back(ptr(o));
    return local_->allgather(ptr(in), p.data(), in.numel(), dt(in), deadline());
  }
  std::vector<std::vector<at::Tensor>> o{asCpuBytes(outs)};
  std::vector<at::Tensor> i{asCpuBytes(in)};
  glooWait(gloo_all_->allgather(o, i, c10d::AllgatherOptions()));
}

void Engine::reduceScatter(std::vector<at::Tensor>& ins, at::Tensor& out, RedOp op, double premul) {
  if (topo.singleHost()) {
    std::vector<const void*> p;
    for (auto& i : ins) p.push_back(ptr(i));
    return local_->reduceScatter(p.data(), ptr(out), out.numel(), dt(out), op, premul, deadline());
  }
  // Across hosts: Gloo, with PREMUL_SUM and AVG folded in here.
  const at::ScalarType wire = glooReductionDtype(out.scalar_type());
  std::vector<at::Tensor> src;
  for (auto& i : ins) src.push_back((op == RedOp::kPremulSum ? i.mul(premul) : i).to(wire).cpu());
  at::Tensor result = at::empty(out.sizes(), out.options().device(at::kCPU).dtype(wire));
  std::vector<std::vector<at::Tensor>> in_list{src};
  std::vector<at::Tensor> out_list{result};
  c10d::ReduceScatterOptions o;
  o.reduceOp = glooOp(op, out.scalar_type() == at::kBool);
  glooWait(gloo_all_->reduce_scatter(out_list, in_list, o));
  if (op == RedOp::kAvg) result.div_(topo.size);
  out.copy_(result);
}

void Engine::alltoall(std::vector<at::Tensor>& ins, std::vector<at::Tensor>& outs) {
  if (topo.singleHost()) {
    std::vector<const void*> sp;
    std::vector<void*> rp;
    std::vector<int64_t> sc, rc;
    for (auto& i : ins) sp.push_back(ptr(i)), sc.push_back(i.numel());
    for (auto& o : outs) rp.push_back(ptr(o)), rc.push_back(o.numel());
    return local_->alltoall(sp.data(), sc.data(), rp.data(), rc.data(), dt(ins.at(0)), deadline());
  }
  // Gloo's list all_to_all wants equal sizes: pack bytes and use the split form.
  std::vector<at::Tensor> i = asCpuBytes(ins), o = asCpuBytes(outs);
  std::vector<int64_t> in_splits, out_splits;
  for (const auto& t : i) in_splits.push_back(t.numel());
  for (const auto& t : o) out_splits.push_back(t.numel());
  at::Tensor packed_in = at::cat(i);
  at::Tensor packed_out =
      at::empty({std::accumulate(out_splits.begin(), out_splits.end(), int64_t(0))}, packed_in.options());
  // Gloo may move from the split vectors it is given: pass copies.
  std::vector<int64_t> out_arg = out_splits, in_arg = in_splits;
  glooWait(gloo_all_->alltoall_base(packed_out, packed_in, out_arg, in_arg, c10d::AllToAllOptions()));
  int64_t off = 0;
  for (size_t k = 0; k < o.size(); ++k) {
    o[k].copy_(packed_out.narrow(0, off, out_splits[k]));
    off += out_splits[k];
  }
}

void Engine::gather(const at::Tensor& in, std::vector<at::Tensor>& outs, int root) {
  if (topo.singleHost()) {
    std::vector<void*> p;
    for (auto& o : outs) p.push_back(ptr(o));
    return local_->gather(ptr(in), p.data(), in.numel(), dt(in), root, deadline());
  }
  std::vector<std::vector<at::Tensor>> o;
  if (topo.rank == root) o.push_back(asCpuBytes(outs));
  std::vector<at::Tensor> i{asCpuBytes(in)};
  c10d::GatherOptions opts;
  opts.rootRank = root;
  glooWait(gloo_all_->gather(o, i, opts));
}

void Engine::scatter(std::vector<at::Tensor>& ins, at::Tensor& out, int root) {
  if (topo.singleHost()) {
    std::vector<const void*> p;
    for (auto& i : ins) p.push_back(ptr(i));
    return local_->scatter(p.data(), ptr(out), out.numel(), dt(out), root, deadline());
  }
  std::vector<std::vector<at::Tensor>> i;
  if (topo.rank == root) i.push_back(asCpuBytes(ins));
  std::vector<at::Tensor> o{asCpuBytes(out)};
  c10d::ScatterOptions opts;
  opts.rootRank = root;
  glooWait(gloo_all_->scatter(o, i, opts));
}

void Engine::p2p(std::vector<P2PItem>& items) {
  std::vector<LocalComm::P2POp> local_ops;
  std::vector<c10::intrusive_ptr<c10d::Work>> remote;
  for (P2PItem& it : items) {
    int li = topo.localIndexOf(it.peer);
    if (li >= 0) {
      LocalComm::P2POp op;
      op.is_send = it.is_send;
      op.peer = li;
      op.data = static_cast<uint8_t*>(ptr(it.tensor));
      op.bytes = int64_t(it.tensor.nbytes());
      op.dtype = dt(it.tensor);
      op.tag = it.tag;
      local_ops.push_back(op);
    } else {
      std::vector<at::Tensor> t{asCpuBytes(it.tensor)};
      remote.push_back(it.is_send ? gloo_all_->send(t, it.peer, it.tag) : gloo_all_->recv(t, it.peer, it.tag));
    }
  }
  if (!local_ops.empty()) local_->runP2P(local_ops, deadline());
  for (auto& w : remote) glooWait(w);
  for (P2PItem& it : items)
    if (!it.is_send && it.user.defined()) it.user.copy_(it.tensor);
}

}  // namespace npudist::hccl
