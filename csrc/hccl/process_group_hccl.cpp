#include "hccl/process_group_hccl.h"

#include <ATen/core/jit_type.h>
#include <c10/util/Exception.h>

#include <stdexcept>
#include <unistd.h>
#include <utility>

#include "core/deferred.h"
#include "core/stream.h"
#include "hccl/desync.h"
#include "hccl/fault_hooks.h"
#include "hccl/flight_recorder.h"
#include "hccl/shm_wait.h"
#include "hccl/watchdog.h"
#include "hccl/work.h"
#include "hccl/zero_copy.h"
#include "profiler/collective_events.h"

namespace npudist::hccl {

ProcessGroupHCCL::ProcessGroupHCCL(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                                   c10::intrusive_ptr<Options> options, GlooFactory gloo_factory, int home_device)
    : c10d::Backend(rank, size),
      options_(std::move(options)),
      gloo_factory_(std::move(gloo_factory)),
      home_device_(home_device),
      comm_stream_(core::newStream(c10::DeviceIndex(home_device), 0)) {
  // Settings read lazily later (some first on the stream's thread) are read
  // here once, so an invalid value raises to the caller (util/env.h).
  (void)spinBudgetNs(), (void)blockingWaitRequested(), (void)desyncDebug(), (void)execTimeout(), (void)oneshotBytes();
  (void)FlightRecorder::captureFramesEnabled(), (void)zeroCopyEnabled();
  const std::string name = options_->group_name.empty() ? std::string("unnamed") : options_->group_name;
  engine_ = std::make_shared<Engine>(store, rank, size, name, options_->timeout, gloo_factory_);
  std::vector<int64_t> global_ranks(options_->global_ranks_in_group.begin(), options_->global_ranks_in_group.end());
  stats_ = std::make_shared<GroupStats>(name, rank, size, std::move(global_ranks), int64_t(options_->timeout.count()));
  stats_->engine = engine_;
  tracked_ = watchdogEnabled();
  if (tracked_) {
    FlightRecorder::get().describeGroup(stats_->pg_id, stats_->name, rank);
    registerGroup(stats_);
    Watchdog::get().attach(stats_, store);
  }
  init();
}

ProcessGroupHCCL::~ProcessGroupHCCL() {
  shelf_->drain();
  try {
    releaseThreads(/*wait_ms=*/0, /*drain=*/false);
  } catch (...) {
    // a destructor must not throw (it may run during finalization)
  }
}

// Thread lifecycle (docs/lifecycle.md): the group's stream worker returns once
// its queue is empty (joined here when that takes at most `wait_ms`, else by
// the next stop or at exit); the watchdog's threads stop with the last group.
void ProcessGroupHCCL::releaseThreads(int64_t wait_ms, bool drain) {
  // In a forked child the threads are the parent's and its locks may be held
  // (docs/lifecycle.md): nothing here is the child's to stop.
  if (getpid() != creator_pid_) return;
  core::stopStreamWorker(comm_stream_, wait_ms, drain);
  if (tracked_ && !threads_released_) {
    threads_released_ = true;
    if (unregisterGroup(stats_.get()) == 0) Watchdog::get().stop(std::chrono::milliseconds(2000));
  }
}

void ProcessGroupHCCL::setTimeout(std::chrono::milliseconds timeout) {
  options_->timeout = timeout;
  engine_->setTimeout(timeout);
  stats_->timeout_ms.store(int64_t(timeout.count()));
}

uint64_t ProcessGroupHCCL::getSequenceNumberForGroup() { return engine_->local().lastSeq(); }

c10d::ErrorType ProcessGroupHCCL::getError() {
  return engine_->broken() ? c10d::ErrorType::COMM_ERROR : c10d::ErrorType::SUCCESS;
}

void ProcessGroupHCCL::abort() {
  engine_->user_aborted = true;  // what fails next is expected: the watchdog leaves it alone
  engine_->abort("ProcessGroup.abort() on rank " + std::to_string(rank_));
}

void ProcessGroupHCCL::shutdown() {
  // Let queued collectives finish, then stop; peers are not waited for.
  std::string ignored;
  core::drainStream(comm_stream_, &ignored);
  shelf_->drain();
  releaseThreads(/*wait_ms=*/1000, /*drain=*/true);
}

c10::intrusive_ptr<c10d::Backend> ProcessGroupHCCL::split(const c10::intrusive_ptr<c10d::Store>& store,
                                                          const std::vector<int>& ranks,
                                                          const c10::intrusive_ptr<c10d::Backend::Options>& opts) {
  auto it = std::find(ranks.begin(), ranks.end(), rank_);
  if (it == ranks.end()) return nullptr;
  // ProcessGroup::splitGroup asks once per device type (npu and cpu share this
  // backend): hand out one communicator for the same split.
  if (last_split_ && last_split_store_ == store.get() && last_split_ranks_ == ranks) return last_split_;
  auto o = c10::make_intrusive<Options>(opts ? opts->timeout : options_->timeout);
  if (opts) {
    o->group_name = opts->group_name;
    o->global_ranks_in_group = opts->global_ranks_in_group;
  }
  last_split_ = c10::make_intrusive<ProcessGroupHCCL>(store, int(it - ranks.begin()), int(ranks.size()), o,
                                                      gloo_factory_, home_device_);
  last_split_store_ = store.get();
  last_split_ranks_ = ranks;
  return last_split_;
}

void ProcessGroupHCCL::runBody(Engine& engine, OpState& state, const Body& body) {
  // Set already when the collective runs at once on the caller's thread.
  int64_t start = state.start_ns.load(std::memory_order_relaxed);
  if (!start) {
    start = core::monotonicNs();
    state.start_ns.store(start, std::memory_order_relaxed);
  }
  GroupStats* g = state.group.get();
  // Peers read what this rank started and completed (desync reports); the
  // members of a coalesced batch are published as one step.
  const bool published = g && !state.is_p2p && state.collective_seq;
  if (g) {
    g->onStart(state);
    if (!state.fr_started) FlightRecorder::get().started(state.fr_id, start);
    if (published) engine.local().publishProgress(state.collective_seq, state.collective_seq - 1, state.kind);
  }
  std::exception_ptr err;
  profiler::DeviceScope timed(profiler::EventKind::kCollective, state.device, state.profiler_stream);
  if (C10_UNLIKELY(timed.on())) profiler::describeCollective(timed, state, engine.group_name);
  try {
    injectRunFault(engine, state);  // docs/fault_injection.md (partition)
    engine.op_start_ns = start;
    body(engine);
  } catch (...) {
    err = onBodyFailure(engine, state, std::current_exception());
  }
  engine.op_start_ns = 0;
  state.finish(err);
  if (published && !err) engine.local().publishProgress(state.collective_seq, state.collective_seq, state.kind);
}

namespace {

std::string messageOf(const std::exception_ptr& e) {
  try {
    std::rethrow_exception(e);
  } catch (const c10::Error& x) {
    return x.what_without_backtrace();
  } catch (const std::exception& x) {
    return x.what();
  } catch (...) {
    return "unknown error";
  }
}

}  // namespace

std::exception_ptr ProcessGroupHCCL::onBodyFailure(Engine& engine, OpState& state, std::exception_ptr err) {
  FailureKind kind = engine.local().lastFailure();
  engine.local().clearFailure();
  if (kind == FailureKind::kNone) kind = FailureKind::kOther;  // Gloo (across hosts) or a kernel error
  if (state.timed_out_by_watchdog.load()) kind = FailureKind::kTimeout;
  std::string message = messageOf(err);
  if (state.group) {
    if (kind == FailureKind::kTimeout) {
      state.group->countTimeout();
      try {
        message = describeTimeout(*state.group, engine, state, message);
        C10_THROW_ERROR(DistBackendError, message);
      } catch (...) {
        err = std::current_exception();
      }
    } else if (kind == FailureKind::kMismatch) {
      state.group->countMismatch();
    }
    if (!engine.user_aborted) Watchdog::get().onFailure(state.group, kind, message);
  }
  return err;
}

namespace {
// The group's description, once torch has set it (the first collective after).
C10_NOINLINE void noteGroupDesc(GroupStats& stats, const std::string& desc) {
  stats.setDesc(desc);
  FlightRecorder::get().setGroupDesc(stats.pg_id, desc);
}
C10_NOINLINE int64_t recordWithFrames(const FrRecord& r, const OpState& state) {
  std::vector<Frame> frames = FlightRecorder::captureFrames();
  return FlightRecorder::get().record(r, state.inputList(), state.outputs, &frames);
}
}  // namespace

// On every collective's path: kept short, the rare cases out of line.
void ProcessGroupHCCL::track(OpState& state, const char* name, int peer, bool starts_now) {
  if (state.group != stats_) state.group = stats_;  // a pooled state has it already
  state.enqueue_ns = starts_now ? state.start_ns.load(std::memory_order_relaxed) : core::monotonicNs();
  if (C10_UNLIKELY(!stats_->hasDesc()) && !getGroupDesc().empty()) noteGroupDesc(*stats_, getGroupDesc());
  const int kind = opKindIndex(name);  // cached per thread (callers pass literals)
  state.kind = kind == kCoalescedKind ? -1 : kind;
  state.is_p2p = opKindIsP2P(state.kind);
  stats_->enqueue(state);  // numbers it; the watchdog may look at it from now on
  int64_t in_bytes = 0, out_bytes = 0;
  for (const auto& t : state.inputList()) in_bytes += t.defined() ? int64_t(t.nbytes()) : 0;
  for (const auto& t : state.outputs) out_bytes += t.defined() ? int64_t(t.nbytes()) : 0;
  state.bytes = std::max(in_bytes, out_bytes);
  FlightRecorder& fr = FlightRecorder::get();
  if (state.kind >= 0 && fr.enabled()) {
    FrRecord r;
    r.pg_id = stats_->pg_id;
    r.collective_seq = state.collective_seq;
    r.p2p_seq = state.p2p_seq;
    r.op_id = state.op_id;
    r.kind = state.kind;
    r.peer = peer;
    r.is_p2p = state.is_p2p;
    r.desc_known = stats_->hasDesc();
    r.started = starts_now;
    r.created_ns = monoToWallNs(state.enqueue_ns);
    r.timeout_ms = stats_->timeout_ms.load(std::memory_order_relaxed);
    state.fr_id = C10_UNLIKELY(FlightRecorder::captureFramesEnabled())
                      ? recordWithFrames(r, state)
                      : fr.record(r, state.inputList(), state.outputs, nullptr);
    state.fr_started = starts_now && state.fr_id >= 0;
  }
}

c10::intrusive_ptr<c10d::Work> ProcessGroupHCCL::submit(c10d::OpType type, const char* name,
                                                        const std::vector<at::Tensor>& inputs,
                                                        const std::vector<at::Tensor>& outputs, bool async_op,
                                                        Body body, int peer,
                                                        std::vector<std::shared_ptr<OpState>> members) {
  const bool in_deferred = core::inDeferredWork();
  // This (user) thread drops what finished collectives of the group left.
  if (!in_deferred) shelf_->drain();
  c10::DeviceIndex dev = -1;
  for (const auto* list : {&inputs, &outputs})
    for (const auto& t : *list)
      if (t.defined() && t.device().is_privateuseone()) dev = t.device().index();

  if (dev >= 0 && !coalescing_ && core::anyGraphCapture() &&
      captureCollective(type, name, inputs, outputs, body, peer, dev)) {
    auto done = std::make_shared<OpState>();  // nothing ran: the graph runs it at each replay
    done->device = dev;
    done->outputs = outputs;
    done->name = std::string("hccl:") + name;
    done->future = c10::make_intrusive<c10::ivalue::Future>(c10::ListType::create(c10::TensorType::get()));
    done->future->markCompleted(c10::IValue(outputs));
    done->done.store(true);
    return c10::make_intrusive<WorkHCCL>(rank_, type, done, profiler::workTitle(done->name));
  }
  injectIssueFault(*engine_, name);  // docs/fault_injection.md (hang, slow)
  // Latency path: nothing queued ahead, and the caller wants the result now.
  const bool run_now = !coalescing_ && !async_op && !in_deferred && core::streamIdle(comm_stream_);
  // One look at the record-function callbacks per collective (~200 instructions).
  const bool callbacks = at::hasCallbacks();
  // The latency path reuses a finished Work and its state when nobody holds
  // them any more (WorkPool, work.h); a profiled one gets a fresh Work (its
  // title makes c10d::Work record a function).
  const bool poolable = run_now && !C10_UNLIKELY(callbacks);
  c10::intrusive_ptr<WorkHCCL> work = poolable ? work_pool_.take(type) : nullptr;
  std::shared_ptr<OpState> state;  // set unless the Work came from the pool
  if (!work) state = std::make_shared<OpState>();
  OpState& st = work ? work->opState() : *state;
  st.device = dev;
  st.outputs = outputs;
  if (st.name_key != name) {
    // Callers pass string literals: the name is made once per op kind and thread.
    thread_local const char* last = nullptr;
    thread_local std::string last_name;
    if (name != last) {
      last_name = std::string("hccl:") + name;
      last = name;
    }
    st.name = last_name;
    st.name_key = name;
  }
  if (!work) {
    st.engine = engine_;
    st.shelf = shelf_;
  }
  // In-place collectives pass one list as both.
  if (&inputs == &outputs) {
    st.inputs_are_outputs = true;
  } else {
    st.inputs = inputs;
  }
  if (run_now) {
    st.start_ns.store(core::monotonicNs(), std::memory_order_relaxed);
  } else {
    static const c10::TypePtr kTensorList = c10::ListType::create(c10::TensorType::get());
    st.future = c10::make_intrusive<c10::ivalue::Future>(kTensorList);
  }
  if (tracked_) track(st, name, peer, run_now);
  // PyTorch's record_param_comms range and the issuing op of the device event.
  profiler::ParamCommsRange comms;
  if (C10_UNLIKELY(callbacks) && !in_deferred) {
    comms.open({name, stats_->name, getGroupDesc(), rank_, size_, stats_->global_ranks,
                int64_t(st.is_p2p ? st.p2p_seq : st.collective_seq), st.is_p2p},
               st);
    if (profiler::active() && dev >= 0) {
      st.profiler_correlation = profiler::currentCorrelation();
      st.profiler_user_correlation = profiler::currentUserCorrelation();
      st.profiler_stream = comm_stream_.id();
      if (profiler::stepTrace()) {
        st.profiler_issue_stream = core::currentStreamId(dev);
        st.profiler_issue_ns = profiler::nowNs();
        st.profiler_peer = peer;
        st.profiler_pg = stats_->name;
        st.profiler_ranks = stats_->global_ranks;
      }
      comms.markLaunch(st.profiler_correlation);
    }
  }
  if (!work) {
    work = c10::make_intrusive<WorkHCCL>(rank_, type, state,
                                         C10_UNLIKELY(callbacks) ? profiler::workTitle(st.name) : nullptr);
    if (poolable) work_pool_.offer(work);
  }

  if (coalescing_) {
    coalesced_bodies_.push_back(std::move(body));
    coalesced_states_.push_back(state);
    coalesced_outputs_.insert(coalesced_outputs_.end(), outputs.begin(), outputs.end());
    return work;
  }

  st.blocking_wait = !async_op && (dev < 0 || core::currentStreamId(dev) == 0);
  if (run_now) {
    // An error of earlier work on the caller's stream is raised after this
    // collective has run, so that this rank stays in step with its peers.
    std::exception_ptr earlier;
    if (dev >= 0) {
      try {
        core::waitCurrentStream(dev);
      } catch (...) {
        earlier = std::current_exception();
      }
    }
    runBody(*engine_, st, body);
    st.keepTensorsWeakly();
    if (earlier) std::rethrow_exception(earlier);
    return work;
  }
  if (dev >= 0) core::streamWaitStream(comm_stream_, core::currentStream(dev));
  auto engine = engine_;
  auto status = core::makeUnqueuedTask([weak_state = std::weak_ptr<OpState>(state)] {
    auto s = weak_state.lock();
    if (s && s->error) throw std::runtime_error(messageOf(s->error));
  });
  state->status = status;
  // Futures (and a coalesced batch's members') complete after the task is
  // done, then this thread hands the tensors over (ReleaseShelf, work.h).
  struct Job {
    std::shared_ptr<OpState> state;
    Body body;
    std::vector<std::shared_ptr<OpState>> members;
  };
  state->defer_future = true;
  for (auto& m : members) m->defer_future = true;
  auto job = std::make_shared<Job>(Job{state, std::move(body), std::move(members)});
  state->task = core::launchDeferredTask(
      comm_stream_,
      [job, engine, status] {
        runBody(*engine, *job->state, job->body);
        status.runIfUnclaimed();
      },
      /*tolerate_failed_deps=*/true,
      [job, shelf = shelf_] {
        job->state->completeFuture();
        for (auto& m : job->members) m->completeFuture();
        shelf->put(std::move(job->state), std::move(job->body));
        for (auto& m : job->members) shelf->put(std::move(m), nullptr);
        job->members.clear();
      });
  status.dependOn(state->task);
  return work;
}

// A collective issued on a stream that captures an npu graph is recorded
// through the device core: each replay issues it anew, so it gets a new
// sequence number and is tracked (watchdog, flight recorder) as the eager
// collective it then is; the capture itself leaves no in-flight work.
bool ProcessGroupHCCL::captureCollective(c10d::OpType type, const char* name, const std::vector<at::Tensor>& inputs,
                                         const std::vector<at::Tensor>& outputs, const Body& body, int peer,
                                         c10::DeviceIndex dev) {
  c10::Stream stream = core::currentStream(dev);
  if (!stream.is_capturing()) return false;
  TORCH_CHECK(std::strcmp(name, "coalesced") != 0,
              "hccl: coalesced collectives cannot be captured in an npu graph yet; "
              "issue them one by one inside the capture");
  auto self = c10::intrusive_ptr<ProcessGroupHCCL>::reclaim_copy(this);
  std::string op = name;
  return core::captureDeferredWork(stream, "hccl:" + op, [self, type, op, inputs, outputs, body, peer] {
    self->submit(type, op.c_str(), inputs, outputs, /*async_op=*/false, body, peer)->wait();
  });
}

void ProcessGroupHCCL::rejectInput(Op op, const std::string& reason) {
  // It counts as this rank's collective (its peers number theirs too) and it failed.
  if (tracked_) {
    auto rejected = std::make_shared<OpState>();
    rejected->name = std::string("hccl:") + opName(op);
    track(*rejected, opName(op), -1, /*starts_now=*/false);
    rejected->finish(std::make_exception_ptr(std::invalid_argument(reason)));
    Watchdog::get().onFailure(stats_, FailureKind::kInvalid, reason);
  }
  // Peers are told in order, behind whatever this rank has already queued.
  auto engine = engine_;
  core::launchDeferred(comm_stream_, [engine, op, reason] { engine->announceInvalid(op, reason); });
  C10_THROW_ERROR(ValueError, c10::str("hccl ", opName(op), " in group '", engine_->group_name, "' (rank ", rank_,
                                       "): ", reason, ". The other ranks of the group fail this collective too."));
}

void ProcessGroupHCCL::startCoalescing() {
  TORCH_CHECK(!coalescing_, "hccl: startCoalescing called twice without endCoalescing");
  coalescing_ = true;
}

c10::intrusive_ptr<c10d::Work> ProcessGroupHCCL::endCoalescing() {
  TORCH_CHECK(coalescing_, "hccl: endCoalescing without startCoalescing");
  coalescing_ = false;
  auto bodies = std::exchange(coalesced_bodies_, {});
  auto states = std::exchange(coalesced_states_, {});
  auto p2p = std::exchange(coalesced_p2p_, {});
  std::vector<at::Tensor> tensors = std::exchange(coalesced_outputs_, {});
  for (const auto& item : p2p) tensors.push_back(item.tensor);
  // Collectives run in issue order, then the batch's sends and receives all
  // progress together (so rank pairs exchanging both ways cannot deadlock).
  Body group = [bodies = std::move(bodies), states, p2p = std::move(p2p)](Engine& engine) mutable {
    engine.op_start_ns = 0;  // each member's deadline counts from its own start
    std::exception_ptr first;
    for (size_t i = 0; i < bodies.size(); ++i) {
      auto& body = bodies[i];
      states[i]->start_ns.store(core::monotonicNs(), std::memory_order_relaxed);
      try {
        body(engine);
      } catch (...) {
        if (!first) first = std::current_exception();
      }
    }
    if (!p2p.empty() && !first) {
      try {
        engine.p2p(p2p);
      } catch (...) {
        first = std::current_exception();
      }
    }
    for (auto& s : states) s->finish(first);
    if (first) std::rethrow_exception(first);
  };
  return submit(c10d::OpType::COALESCED, "coalesced", {}, tensors, /*async_op=*/true, std::move(group), -1,
                std::move(states));
}

}  // namespace npudist::hccl
