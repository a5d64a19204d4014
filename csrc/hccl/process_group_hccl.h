// ProcessGroupHCCL: npudist's c10d::Backend, registered as "hccl".
//
// Collectives run on the communicator's stream behind the issuing stream's
// pending work (docs/architecture.md, "Execution model"); a synchronous collective issued
// on a stream with nothing pending runs at once on the caller's thread.
// Within a host, ranks exchange data through a shared segment (LocalComm);
// a group spanning hosts runs hierarchically with Gloo between host leaders
// (a ProcessGroupGloo made in Python, driven through the c10d::Backend API).
#pragma once

#include <unistd.h>

#include <c10/core/Stream.h>
#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "hccl/engine.h"
#include "hccl/group_stats.h"
#include "hccl/work.h"

namespace npudist::hccl {

class ProcessGroupHCCL : public c10d::Backend {
 public:
  struct Options : c10d::Backend::Options {
    explicit Options(std::chrono::milliseconds timeout = kBackendDefaultTimeout)
        : c10d::Backend::Options("hccl", timeout) {}
  };

  // `gloo_factory(store, rank, size, timeout)` builds a ProcessGroupGloo;
  // it is called only for groups that span hosts.
  ProcessGroupHCCL(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                   c10::intrusive_ptr<Options> options, GlooFactory gloo_factory, int home_device);
  ~ProcessGroupHCCL() override;

  const std::string getBackendName() const override { return "hccl"; }
  c10::intrusive_ptr<c10d::Backend::Options> getBackendOptions() override { return options_; }
  bool supportsCoalescing() const override { return true; }
  bool supportsSplitting() const override { return true; }
  void setTimeout(std::chrono::milliseconds timeout) override;
  void startCoalescing() override;
  c10::intrusive_ptr<c10d::Work> endCoalescing() override;
  void eagerConnectSingleDevice(at::Device device) override {}
  void setSequenceNumberForGroup() override {}
  uint64_t getSequenceNumberForGroup() override;
  c10d::ErrorType getError() override;
  void abort() override;
  void shutdown() override;
  c10::intrusive_ptr<c10d::Backend> split(const c10::intrusive_ptr<c10d::Store>& store, const std::vector<int>& ranks,
                                          const c10::intrusive_ptr<c10d::Backend::Options>& opts) override;

  c10::intrusive_ptr<c10d::Work> broadcast(std::vector<at::Tensor>& tensors,
                                           const c10d::BroadcastOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allreduce(std::vector<at::Tensor>& tensors,
                                           const c10d::AllreduceOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allreduce_coalesced(std::vector<at::Tensor>& tensors,
                                                     const c10d::AllreduceCoalescedOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce(std::vector<at::Tensor>& tensors, const c10d::ReduceOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allgather(std::vector<std::vector<at::Tensor>>& outputs,
                                           std::vector<at::Tensor>& inputs,
                                           const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> _allgather_base(at::Tensor& output, at::Tensor& input,
                                                 const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allgather_coalesced(std::vector<std::vector<at::Tensor>>& outputs,
                                                     std::vector<at::Tensor>& inputs,
                                                     const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allgather_into_tensor_coalesced(std::vector<at::Tensor>& outputs,
                                                                 std::vector<at::Tensor>& inputs,
                                                                 const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> gather(std::vector<std::vector<at::Tensor>>& outputs, std::vector<at::Tensor>& inputs,
                                        const c10d::GatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> scatter(std::vector<at::Tensor>& outputs, std::vector<std::vector<at::Tensor>>& inputs,
                                         const c10d::ScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce_scatter(std::vector<at::Tensor>& outputs,
                                                std::vector<std::vector<at::Tensor>>& inputs,
                                                const c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> _reduce_scatter_base(at::Tensor& output, at::Tensor& input,
                                                      const c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce_scatter_tensor_coalesced(std::vector<at::Tensor>& outputs,
                                                                 std::vector<at::Tensor>& inputs,
                                                                 const c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> alltoall_base(at::Tensor& output, at::Tensor& input,
                                               std::vector<int64_t>& output_splits, std::vector<int64_t>& input_splits,
                                               const c10d::AllToAllOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> alltoall(std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
                                          const c10d::AllToAllOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> send(std::vector<at::Tensor>& tensors, int dst, int tag) override;
  c10::intrusive_ptr<c10d::Work> recv(std::vector<at::Tensor>& tensors, int src, int tag) override;
  c10::intrusive_ptr<c10d::Work> recvAnysource(std::vector<at::Tensor>& tensors, int tag) override;
  c10::intrusive_ptr<c10d::Work> barrier(const c10d::BarrierOptions& opts) override;

  // Diagnostics for tests and the watchdog.
  const Topology& topology() const { return engine_->topo; }
  const std::shared_ptr<GroupStats>& stats() const { return stats_; }
  int homeDevice() const { return home_device_; }

 private:
  // What a collective does once its turn comes, on whichever thread runs it.
  using Body = std::function<void(Engine&)>;

  // Validates nothing; queues (or runs) `body` over the given tensors.
  // `peer`: the other group rank of a send/recv (for the trace's name).
  c10::intrusive_ptr<c10d::Work> submit(c10d::OpType type, const char* name, const std::vector<at::Tensor>& inputs,
                                        const std::vector<at::Tensor>& outputs, bool async_op, Body body, int peer = -1,
                                        std::vector<std::shared_ptr<OpState>> members = {});
  // Records the collective into the npu graph the current stream captures, if any.
  bool captureCollective(c10d::OpType type, const char* name, const std::vector<at::Tensor>& inputs,
                         const std::vector<at::Tensor>& outputs, const Body& body, int peer, c10::DeviceIndex dev);
  // Numbers, counts and traces a collective (group_stats.h, flight_recorder.h).
  // starts_now: it runs at once on this thread (its start_ns is set).
  void track(OpState& state, const char* name, int peer, bool starts_now);
  // A rank whose input failed its own checks still arrives (flagged), so that
  // its peers fail with its reason instead of waiting; then it raises.
  [[noreturn]] void rejectInput(Op op, const std::string& reason);
  // Runs a collective's body and completes its state (and future).
  static void runBody(Engine& engine, OpState& state, const Body& body);
  // After a failure: the final error (timeouts get the full report), counters, watchdog.
  static std::exception_ptr onBodyFailure(Engine& engine, OpState& state, std::exception_ptr err);

  c10::intrusive_ptr<Options> options_;
  std::shared_ptr<Engine> engine_;
  std::shared_ptr<GroupStats> stats_;
  bool tracked_ = true;  // NPUDIST_HCCL_WATCHDOG when the group was made
  bool threads_released_ = false;
  int creator_pid_ = int(::getpid());
  void releaseThreads(int64_t wait_ms, bool drain);
  GlooFactory gloo_factory_;
  int home_device_;
  c10::Stream comm_stream_;
  // Finished collectives' tensors, dropped by user threads (work.h).
  std::shared_ptr<ReleaseShelf> shelf_ = std::make_shared<ReleaseShelf>();
  // Recycled Works of latency-path collectives (work.h).
  WorkPool work_pool_;
  c10::intrusive_ptr<c10d::Backend> last_split_;
  const c10d::Store* last_split_store_ = nullptr;
  std::vector<int> last_split_ranks_;

  // Coalescing (start/endCoalescing): bodies gathered, then one task.
  bool coalescing_ = false;
  std::vector<Body> coalesced_bodies_;
  std::vector<at::Tensor> coalesced_outputs_;
  std::vector<std::shared_ptr<OpState>> coalesced_states_;
  std::vector<P2PItem> coalesced_p2p_;
};

}  // namespace npudist::hccl
