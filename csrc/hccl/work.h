// WorkHCCL: the c10d::Work of one hccl collective (or coalesced group).
// wait() is stream-ordered for npu tensors (the current stream waits for
// the collective, as WorkNCCL::wait does); it blocks for cpu tensors, when
// given a timeout, or with TORCH_HCCL_BLOCKING_WAIT=1.
#pragma once

#include <ATen/core/ivalue.h>
#include <c10/util/SmallVector.h>
#include <torch/csrc/distributed/c10d/Work.hpp>

#include <atomic>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/deferred.h"

namespace npudist::hccl {

class Engine;
class GroupStats;
struct OpState;

// Where a group's thread leaves its references to a finished collective's
// tensors (its state and its body's captures) for a user thread to drop: the
// next collective of the group, Work.wait(), shutdown. Dropping the last C++
// reference to a tensor that Python also owns takes the GIL, and the thread
// holding the GIL may be waiting, on a stream, for that very collective (FSDP2
// resizes storages with the GIL held): the group's thread must never need it.
// ProcessGroupNCCL keeps its watchdog thread from releasing tensors likewise.
class ReleaseShelf {
 public:
  void put(std::shared_ptr<OpState> state, std::function<void(Engine&)> body);
  // Drops everything put so far, on the calling thread (one atomic load when empty).
  void drain();

 private:
  std::mutex mutex_;
  std::atomic<bool> nonempty_{false};
  std::vector<std::shared_ptr<OpState>> states_;
  std::vector<std::function<void(Engine&)>> bodies_;
};

// What a collective's task and its Work share.
struct OpState {
  core::DeferredTask task;  // empty when the collective ran inline
  // Done right after `task`, failed if the collective failed: what waiting
  // streams depend on, so the error reaches them (once) but never the
  // communicator's own stream.
  core::DeferredTask status;
  std::atomic<bool> done{false};
  std::exception_ptr error;         // set before done
  std::vector<at::Tensor> outputs;  // Work.result() and the future's value
  c10::DeviceIndex device = -1;     // npu device of the tensors; -1: cpu tensors
  // async_op=False on the default stream: the caller wants the result now, so
  // wait() blocks and raises the collective's own error (DistBackendError).
  bool blocking_wait = false;
  // Made up front for a collective that runs as a task; for one that ran on
  // the caller's thread (the latency path) only when somebody asks
  // (WorkHCCL::getFuture), as most callers never do.
  c10::intrusive_ptr<c10::ivalue::Future> future;
  std::string name;                // "hccl:all_reduce", for messages
  const char* name_key = nullptr;  // the op's literal `name` was made from (a pooled state keeps it)
  std::atomic<int64_t> start_ns{0}, end_ns{0};
  std::weak_ptr<Engine> engine;       // Work.abort() aborts the communicator
  std::weak_ptr<ReleaseShelf> shelf;  // the group's; Work.wait() empties it

  // Bookkeeping (group_stats.h, flight_recorder.h). kind -1: not counted
  // (the wrapper of a coalesced batch, whose members are counted).
  std::shared_ptr<GroupStats> group;
  int kind = -1;
  bool is_p2p = false;
  uint64_t collective_seq = 0, p2p_seq = 0, op_id = 0;
  int64_t fr_id = -1;       // flight-recorder record id, -1 if none
  bool fr_started = false;  // its entry was made "started" (it ran at once)
  int64_t bytes = 0;        // nccl-tests' S: the larger of input and output bytes
  int64_t enqueue_ns = 0;   // monotonic
  // The group's list of collectives in flight (GroupStats::enqueue), under its lock.
  OpState* in_flight_prev = nullptr;
  OpState* in_flight_next = nullptr;
  bool in_flight_listed = false;
  // Set while torch.profiler records npu activity (csrc/profiler): the CPU op
  // that issued the collective, and the communicator stream it runs on.
  uint64_t profiler_correlation = 0, profiler_user_correlation = 0;
  int64_t profiler_stream = -1;
  // ... and, for a step trace (profiler::stepTrace()), the stream that was
  // current at issue (the communicator's stream waits for it), the peer of a
  // send/recv (group rank, -1 otherwise), the group's name and global ranks.
  int64_t profiler_issue_stream = -1, profiler_issue_ns = 0;
  int profiler_peer = -1;
  std::string profiler_pg;
  std::vector<int64_t> profiler_ranks;
  // The inputs, unless they are the outputs (in-place collectives: one copy
  // of the list is enough); read them through inputList().
  std::vector<at::Tensor> inputs;
  bool inputs_are_outputs = false;
  const std::vector<at::Tensor>& inputList() const { return inputs_are_outputs ? outputs : inputs; }
  std::atomic<bool> timed_out_by_watchdog{false};

  // Set when the collective runs as a task: the future is completed only
  // after the task is done (Python callbacks of the future take the GIL,
  // which a thread waiting for the task on a stream may hold).
  bool defer_future = false;

  // A collective that ran on the caller's thread is done when its Work is
  // returned: it then keeps only weak references to its tensors. Its Work is
  // usually dropped by Python with the GIL released (c10d's Work holder),
  // and dropping the last C++ reference to a tensor that Python owns takes
  // the GIL back (TensorImpl::decref_pyobject): ~600 instructions and two GIL
  // hand-offs per collective. result() and getFuture() still give the tensors
  // while anyone holds them (outputList()).
  c10::SmallVector<c10::weak_intrusive_ptr<c10::TensorImpl, c10::UndefinedTensorImpl>, 2> weak_outputs;
  bool outputs_weak = false;
  void keepTensorsWeakly();
  // The outputs (from the weak references after keepTensorsWeakly(): a
  // tensor nobody holds any more is undefined there).
  std::vector<at::Tensor> outputList() const;

  OpState() = default;
  OpState(const OpState&) = delete;
  OpState& operator=(const OpState&) = delete;
  // Leaves the group's in-flight list if it never finished (a queued task dropped).
  ~OpState();

  // Called once by whoever ran the collective.
  void finish(std::exception_ptr err);
  // Back to a fresh collective's state, keeping what is the same for every
  // collective of the group (engine, shelf, group, name): for a state whose
  // collective ran on the caller's thread and finished, that only its pooled
  // Work still holds (WorkPool).
  void resetForReuse();
  // Completes the future with the outputs or the error (after finish()).
  void completeFuture();
};

class WorkHCCL : public c10d::Work {
 public:
  // `title`: the profiling title c10d::Work gets (it then builds a
  // RecordFunction, an allocation): give it only while someone records
  // (profiler::workTitle); nullptr otherwise.
  WorkHCCL(int rank, c10d::OpType type, std::shared_ptr<OpState> state, const char* title);

  bool isCompleted() override;
  bool isSuccess() const override;
  std::exception_ptr exception() const override;
  std::vector<at::Tensor> result() override;
  void synchronize() override;
  bool wait(std::chrono::milliseconds timeout = kNoTimeout) override;
  void blockCurrentStream() override;
  void abort() override;
  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override;
  float getDuration() const override;
  // recv: the group rank the message came from; for a recv without src it
  // blocks until the message is in (c10d reads it right after wait()).
  int sourceRank() const override;
  void setSourceRank(std::shared_ptr<const std::atomic<int>> source) { source_ = std::move(source); }

  OpState& opState() const { return *state_; }

 private:
  friend class WorkPool;
  void waitBlocking(std::chrono::milliseconds timeout);
  std::shared_ptr<OpState> state_;
  std::shared_ptr<const std::atomic<int>> source_;
  std::mutex future_mutex_;  // getFuture() may make the future (OpState::future)
};

// A group's recycled Works of collectives that ran on the caller's thread
// (the latency path: a synchronous dist.all_reduce makes a Work and its
// OpState, and Python drops both right after wait()). Making and destroying
// the pair cost ~1,000 instructions per collective (c10d::Work's mutex and
// condition variable, the OpState's forty fields, two heap blocks, atomic
// reference counts of the group, engine and shelf); a pooled pair is reset
// instead. A Work is taken back only when nobody else holds it — no strong
// reference but the pool's and no weak one (c10::intrusive_ptr counts), and
// its collective finished — so whoever keeps a Work (async_op, a C++ caller,
// Work.get_future()'s future, which is its own object) sees it unchanged; a
// Work in use is skipped and a new one made. Until reused, a pooled Work keeps
// its state: its error, a future someone asked for (and that future's
// tensors), until the group's next collective on this path.
class WorkPool {
 public:
  // A finished, unreferenced Work made ready for a new collective of `type`, or null.
  c10::intrusive_ptr<WorkHCCL> take(c10d::OpType type);
  // Keeps `work` (just made for a latency-path collective) for reuse, if there is room.
  void offer(const c10::intrusive_ptr<WorkHCCL>& work);

 private:
  static constexpr int kSize = 4;
  std::atomic<bool> busy_{false};  // another thread of the group is taking or offering: skip
  c10::intrusive_ptr<WorkHCCL> works_[kSize];
};

// TORCH_HCCL_BLOCKING_WAIT=1: every wait() blocks the calling thread.
bool blockingWaitRequested();

}  // namespace npudist::hccl
