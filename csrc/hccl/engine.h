// The engine behind one hccl process group: the local communicator of this
// host and, for groups spanning hosts, the Gloo groups that connect the
// hosts. Methods take contiguous tensors and run synchronously on the
// calling thread (the comm stream's, or the caller's on the latency path).
#pragma once

#include <ATen/core/Tensor.h>
#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "hccl/local_comm.h"

namespace npudist::hccl {

using GlooFactory = std::function<c10::intrusive_ptr<c10d::Backend>(
    const c10::intrusive_ptr<c10d::Store>& store, int rank, int size, std::chrono::milliseconds timeout)>;

// Who is where, decided per group by exchanging host identities.
struct Topology {
  int rank = 0, size = 1;
  std::vector<std::string> hosts;  // distinct host identities, ordered by their lowest rank
  std::vector<int> host_of_rank;   // group rank -> host index
  std::vector<int> local_ranks;    // group ranks on my host, ascending
  std::vector<int> leaders;        // lowest group rank of each host
  int my_host = 0, my_local = 0;
  bool singleHost() const { return hosts.size() == 1; }
  int localIndexOf(int group_rank) const;  // -1 if not on my host
};

// One send or receive of a (possibly coalesced) point-to-point batch.
struct P2PItem {
  bool is_send;
  int peer;  // group rank
  int tag;
  at::Tensor tensor;  // contiguous
  at::Tensor user;    // recv into a non-contiguous tensor: copied here afterwards
};

class Engine {
 public:
  Engine(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size, const std::string& group_name,
         std::chrono::milliseconds timeout, const GlooFactory& gloo_factory);

  Topology topo;
  std::string group_name;
  std::chrono::milliseconds timeout;
  std::atomic<bool> user_aborted{false};  // ProcessGroup.abort() was called here

  // Every wait of a collective ends by start + effectiveTimeout(): the group
  // timeout, or HCCL_EXEC_TIMEOUT when that is set, non-zero and shorter.
  // The start is the collective's own (op_start_ns, set by the thread that
  // runs its body: no second clock read), else now.
  int64_t deadline() const;
  int64_t op_start_ns = 0;
  std::chrono::milliseconds effectiveTimeout() const;
  void setTimeout(std::chrono::milliseconds t);
  // "the group's timeout, 600 s" or "HCCL_EXEC_TIMEOUT, 30 s".
  std::string timeoutLabel() const;
  LocalComm& local() { return *local_; }
  void abort(const std::string& why, FailureKind kind = FailureKind::kAborted);
  bool broken() const { return !local_->brokenReason().empty(); }

  void barrier(const Invalid& bad = {});
  void broadcast(at::Tensor& t, int root);
  void allreduce(at::Tensor& t, RedOp op, double premul);
  void reduce(at::Tensor& t, RedOp op, double premul, int root);
  void allgather(const at::Tensor& in, std::vector<at::Tensor>& outs);
  void reduceScatter(std::vector<at::Tensor>& ins, at::Tensor& out, RedOp op, double premul);
  void alltoall(std::vector<at::Tensor>& ins, std::vector<at::Tensor>& outs);
  void gather(const at::Tensor& in, std::vector<at::Tensor>& outs, int root);  // outs: root only
  void scatter(std::vector<at::Tensor>& ins, at::Tensor& out, int root);       // ins: root only
  void p2p(std::vector<P2PItem>& items);
  // Receives into `t` (contiguous) from whichever rank sends to this one
  // with `tag` first; returns that rank (p2p_anysource.cpp).
  int recvAnySource(at::Tensor& t, int tag);

  // Announces an invalid input to local peers (see LocalComm::arrive).
  void announceInvalid(Op op, const std::string& reason);

 private:
  // Multi-host paths (hierarchy.cpp).
  void hierAllreduce(at::Tensor& t, RedOp op, double premul);
  void hierBroadcast(at::Tensor& t, int root);
  void glooWait(const c10::intrusive_ptr<c10d::Work>& w);

  std::unique_ptr<LocalComm> local_;
  c10::intrusive_ptr<c10d::Backend> gloo_all_;      // all ranks of the group (multi-host only)
  c10::intrusive_ptr<c10d::Backend> gloo_leaders_;  // one rank per host (leaders only)
};

// How many groups named `group_name` this process has created before (ranks
// create and destroy a group in the same order, so they agree).
int nextIncarnation(const std::string& group_name);

// An npu tensor as a CPU tensor over the same memory (Gloo takes cpu tensors).
at::Tensor asCpu(const at::Tensor& t);

// The Gloo reduce op for `op` (bool: SUM/MAX are or, PRODUCT/MIN are and; AVG
// and PREMUL_SUM travel as SUM and are scaled by the caller).
c10d::ReduceOp glooOp(RedOp op, bool is_bool);

// The dtype a reduction travels in through Gloo (it lacks int16 and bool sums).
at::ScalarType glooReductionDtype(at::ScalarType t);

// For a Gloo error that says a connection to another host broke: "the
// connection to host 'b' (10.0.0.2) broke: rank(s) [2, 3] of this group are
// lost", from the address in the message and the hosts' addresses
// (lost_host.cpp); empty if the message is not about a lost connection.
std::string describeLostHost(const Topology& topo, const std::string& gloo_message);

// Environment knobs (docs/env_vars.md).
std::chrono::milliseconds connectTimeout();  // HCCL_CONNECT_TIMEOUT, seconds (default 120)
size_t stagingSlotBytes();                   // HCCL_BUFFSIZE, MiB for both slots (default 8)
size_t oneshotBytes();                       // NPUDIST_HCCL_ONESHOT_BYTES (default 65536)
std::chrono::milliseconds execTimeout();     // HCCL_EXEC_TIMEOUT, seconds; 0 (default): none

}  // namespace npudist::hccl
