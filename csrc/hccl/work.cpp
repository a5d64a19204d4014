#include "hccl/work.h"

#include <ATen/core/jit_type.h>
#include <ATen/record_function.h>
#include <c10/util/Exception.h>

#include <chrono>
#include <cstdlib>
#include <thread>

#include "core/stream.h"
#include "hccl/engine.h"
#include "hccl/flight_recorder.h"
#include "hccl/group_stats.h"
#include "util/env.h"
#include "profiler/collective_events.h"

namespace npudist::hccl {

bool blockingWaitRequested() {
  static const bool on = env::getBool("TORCH_HCCL_BLOCKING_WAIT", false);
  return on;
}

OpState::~OpState() {
  if (in_flight_listed && group) group->forget(*this);
}

void OpState::finish(std::exception_ptr err) {
  end_ns.store(core::monotonicNs(), std::memory_order_relaxed);
  if (!start_ns.load(std::memory_order_relaxed)) start_ns.store(end_ns.load(std::memory_order_relaxed));
  error = err;
  if (group) {
    group->onFinish(*this, err != nullptr);
    // A failed collective stays "started" in the trace, as PyTorch's does.
    if (!err)
      FlightRecorder::get().completed(fr_id, start_ns.load(std::memory_order_relaxed),
                                      end_ns.load(std::memory_order_relaxed));
  }
  done.store(true, std::memory_order_release);
  if (!defer_future) completeFuture();
}

void OpState::resetForReuse() {
  done.store(false, std::memory_order_relaxed);
  error = nullptr;
  outputs.clear();
  if (future) future.reset();
  start_ns.store(0, std::memory_order_relaxed);
  end_ns.store(0, std::memory_order_relaxed);
  blocking_wait = false;
  kind = -1;
  is_p2p = false;
  collective_seq = p2p_seq = op_id = 0;
  fr_id = -1;
  fr_started = false;
  bytes = 0;
  enqueue_ns = 0;
  profiler_correlation = profiler_user_correlation = 0;
  profiler_stream = -1;
  inputs.clear();
  inputs_are_outputs = false;
  timed_out_by_watchdog.store(false, std::memory_order_relaxed);
  defer_future = false;
  weak_outputs.clear();
  outputs_weak = false;
}

c10::intrusive_ptr<WorkHCCL> WorkPool::take(c10d::OpType type) {
  if (busy_.exchange(true, std::memory_order_acquire)) return {};
  c10::intrusive_ptr<WorkHCCL> out;
  for (auto& w : works_) {
    if (!w) break;
    // Only the pool holds it: the count cannot rise under us (nobody else
    // has a reference to copy or a weak one to lock). The acquire fence
    // orders our reuse after the last holder's release of it.
    if (w.use_count() != 1 || w.weak_use_count() != 1) continue;
    std::atomic_thread_fence(std::memory_order_acquire);
    OpState& s = *w->state_;
    if (!s.done.load(std::memory_order_relaxed) || s.task || s.in_flight_listed || w->state_.use_count() != 1) continue;
    s.resetForReuse();
    w->opType_ = type;
    out = w;
    break;
  }
  busy_.store(false, std::memory_order_release);
  return out;
}

void WorkPool::offer(const c10::intrusive_ptr<WorkHCCL>& work) {
  if (busy_.exchange(true, std::memory_order_acquire)) return;
  for (auto& w : works_) {
    if (!w) {
      w = work;
      break;
    }
  }
  busy_.store(false, std::memory_order_release);
}

void OpState::completeFuture() {
  if (!future || future->completed()) return;
  if (error) {
    future->setErrorIfNeeded(error);
  } else {
    future->markCompleted(c10::IValue(outputList()));
  }
}

void OpState::keepTensorsWeakly() {
  for (const auto& t : outputs) weak_outputs.emplace_back(t.getIntrusivePtr());
  outputs_weak = true;
  outputs.clear();
  inputs.clear();
}

std::vector<at::Tensor> OpState::outputList() const {
  if (!outputs_weak) return outputs;
  std::vector<at::Tensor> out;
  out.reserve(weak_outputs.size());
  for (const auto& w : weak_outputs) out.emplace_back(w.lock());
  return out;
}

void ReleaseShelf::put(std::shared_ptr<OpState> state, std::function<void(Engine&)> body) {
  std::lock_guard<std::mutex> g(mutex_);
  states_.push_back(std::move(state));
  if (body) bodies_.push_back(std::move(body));
  nonempty_.store(true, std::memory_order_release);
}

void ReleaseShelf::drain() {
  if (!nonempty_.load(std::memory_order_acquire)) return;
  std::vector<std::shared_ptr<OpState>> states;
  std::vector<std::function<void(Engine&)>> bodies;
  {
    std::lock_guard<std::mutex> g(mutex_);
    states.swap(states_);
    bodies.swap(bodies_);
    nonempty_.store(false, std::memory_order_release);
  }
  // Destroyed here, outside the lock.
}

WorkHCCL::WorkHCCL(int rank, c10d::OpType type, std::shared_ptr<OpState> state, const char* title)
    : c10d::Work(rank, type, title, std::nullopt), state_(std::move(state)) {}

bool WorkHCCL::isCompleted() { return state_->done.load(std::memory_order_acquire); }

bool WorkHCCL::isSuccess() const { return state_->done.load(std::memory_order_acquire) && !state_->error; }

std::exception_ptr WorkHCCL::exception() const {
  return state_->done.load(std::memory_order_acquire) ? state_->error : nullptr;
}

std::vector<at::Tensor> WorkHCCL::result() { return state_->outputList(); }

void WorkHCCL::blockCurrentStream() { synchronize(); }

// Stream-ordered: the tensors' current stream waits for the collective's
// task; its next kernel completes it (running it if nobody has started it)
// and raises the collective's error, if any.
void WorkHCCL::synchronize() {
  if (C10_UNLIKELY(profiler::stepTrace()) && state_->device >= 0)  // done or not: the order is what a trace needs
    profiler::recordCollectiveWait(*state_, state_->device, core::currentStreamId(state_->device),
                                   core::inDeferredWork());
  if (state_->done.load(std::memory_order_acquire) || !state_->task) {
    if (state_->error) std::rethrow_exception(state_->error);
    return;
  }
  if (state_->device < 0 || core::inDeferredWork()) {
    waitBlocking(kNoTimeout);
    return;
  }
  core::streamWaitTasks(core::currentStream(state_->device), {state_->status});
}

void WorkHCCL::waitBlocking(std::chrono::milliseconds timeout) {
  const auto& task = state_->task;
  if (task && !task.done()) {
    if (timeout == kNoTimeout) {
      std::string ignored;  // the collective's own error is in state_->error
      task.complete(&ignored);
    } else {
      auto deadline = std::chrono::steady_clock::now() + timeout;
      auto pause = std::chrono::microseconds(20);
      while (!task.done()) {
        if (std::chrono::steady_clock::now() >= deadline) {
          C10_THROW_ERROR(DistBackendError, c10::str("Work.wait(timeout=", timeout.count(), " ms) timed out for ",
                                                     state_->name, "; the collective is still pending"));
        }
        std::this_thread::sleep_for(pause);
        pause = std::min(pause * 2, std::chrono::microseconds(2000));
      }
    }
  }
  // The future completes right after the task (OpState::defer_future): a
  // blocking wait returns with it completed, as before.
  if (state_->future && !state_->future->completed()) state_->future->wait();
  if (state_->error) std::rethrow_exception(state_->error);
}

bool WorkHCCL::wait(std::chrono::milliseconds timeout) {
  if (!core::inDeferredWork()) {
    if (auto shelf = state_->shelf.lock()) shelf->drain();
  }
  if (state_->device < 0 || state_->blocking_wait || timeout != kNoTimeout || blockingWaitRequested()) {
    const int64_t wait_from = C10_UNLIKELY(profiler::stepTrace()) ? profiler::nowNs() : 0;
    waitBlocking(timeout);
    // recorded once the host is free again, with how long it waited (the trace's host gaps exclude it)
    if (wait_from && state_->device >= 0)
      profiler::recordCollectiveWait(*state_, state_->device, core::currentStreamId(state_->device), true,
                                     profiler::nowNs() - wait_from);
  } else {
    synchronize();
  }
  return true;
}

void WorkHCCL::abort() {
  if (state_->done.load()) return;
  if (auto e = state_->engine.lock()) e->abort("Work.abort() on " + state_->name);
}

c10::intrusive_ptr<c10::ivalue::Future> WorkHCCL::getFuture() {
  std::lock_guard<std::mutex> g(future_mutex_);
  if (!state_->future) {
    // Only a collective that ran on the caller's thread has none yet, and it is done.
    static const c10::TypePtr kTensorList = c10::ListType::create(c10::TensorType::get());
    state_->future = c10::make_intrusive<c10::ivalue::Future>(kTensorList);
    state_->completeFuture();
  }
  return state_->future;
}

float WorkHCCL::getDuration() const {
  int64_t s = state_->start_ns.load(), e = state_->end_ns.load();
  TORCH_CHECK(state_->done.load() && s && e, "getDuration: ", state_->name, " has not completed");
  return float(e - s) / 1e6f;
}

int WorkHCCL::sourceRank() const {
  TORCH_CHECK(source_, "sourceRank() may only be called on the Work of a recv");
  int src = source_->load(std::memory_order_acquire);
  if (src >= 0) return src;
  // From any source: known once the message is in. wait() on npu tensors is
  // stream-ordered and returns before that, so the caller (dist.recv without
  // src reads the source right after wait()) blocks here; a failed receive
  // raises its error.
  const_cast<WorkHCCL*>(this)->waitBlocking(kNoTimeout);
  return source_->load(std::memory_order_acquire);
}

}  // namespace npudist::hccl
