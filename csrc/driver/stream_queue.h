// Streams and events of the execution model (docs/architecture.md).
//
// Compute on the simulated device is synchronous; what a stream orders is
// deferred work (collectives, host functions). A stream keeps a "frontier":
// the tasks anything new on it must wait for. Queuing a task makes it depend
// on the frontier and become the frontier; waiting on an event adds the
// event's tasks. Completing a frontier either waits for its tasks or, when a
// task has not started, runs it on the waiting thread ("caller helps"). A task
// is done as soon as its function returns; what the function captured is
// destroyed afterwards, so waiters never wait for destructors.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace npudist::driver {

struct Task {
  enum State : int { kPending = 0, kRunning = 1, kDone = 2 };

  std::function<void()> fn;
  std::atomic<int> state{kPending};
  std::atomic<int64_t> done_ns{0};
  std::thread::id runner;
  std::string error;  // set when fn threw; read after state is kDone
  // Runs even when a dependency failed (collectives: one failed collective
  // must not stop the communicator's later ones; its error reaches whoever
  // waits on it).
  bool tolerate_failed_deps = false;
  // Runs on the same thread right after the task is done (so nobody waiting
  // for the task waits for it): work that may need a lock a waiter holds, such
  // as the GIL for Python callbacks of a collective's future.
  std::function<void()> after;

  // Tasks that must finish first. Guarded by deps_mutex; cleared when this
  // task finishes so that chains of finished work are freed.
  std::vector<std::shared_ptr<Task>> deps;
  std::mutex deps_mutex;

  std::vector<std::shared_ptr<Task>> depsSnapshot() {
    std::lock_guard<std::mutex> g(deps_mutex);
    return deps;
  }
  bool done() const { return state.load(std::memory_order_acquire) == kDone; }
};
using TaskPtr = std::shared_ptr<Task>;

// Runs `task` (after its dependencies) on this thread if nobody has started it,
// otherwise waits for it: briefly spinning, then sleeping on a futex.
// Returns false with `error` filled if the task (or a dependency) failed or
// would deadlock (the task is running further up this thread's own stack).
bool completeTask(const TaskPtr& task, std::string* error);

// Runs `task` here if nobody has claimed it, without completing its
// dependencies (the caller knows they are complete). Returns false if it was
// already claimed.
bool runIfUnclaimed(const TaskPtr& task);

int64_t monotonicNs();

}  // namespace npudist::driver

struct npudist::driver::StreamObject {
  int device = 0;
  int priority = 0;

  std::mutex mutex;
  std::vector<TaskPtr> frontier;         // guarded by mutex
  std::atomic<bool> has_pending{false};  // fast path: frontier may be non-empty

  // Worker thread that runs queued tasks in order, started on first use and
  // again after it was stopped (a process group's stream stops its worker
  // when the group is shut down). The thread never outlives stop(): it is
  // joined, or, in a forked child where it does not exist, forgotten.
  std::deque<TaskPtr> queue;  // guarded by mutex
  std::condition_variable queue_cv;
  std::thread worker;           // guarded by mutex
  int worker_pid = 0;           // process that started `worker`
  bool worker_running = false;  // guarded by mutex; false once the loop returned
  bool stopping = false;        // guarded by mutex: the worker returns once the queue is empty
  bool closed = false;          // guarded by mutex: process shutdown; no worker is started any more

  TaskPtr enqueue(std::function<void()> fn, bool tolerate_failed_deps = false, std::function<void()> after = {});
  void addDependencies(const std::vector<TaskPtr>& tasks);
  std::vector<TaskPtr> frontierSnapshot();
  // Completes the frontier; false with `error` if a task failed.
  bool synchronize(std::string* error);
  bool idle();
  // Lets the worker return once the queue is empty, without waiting for it.
  void requestStop();
  // Stops the worker after it ran what was queued, and joins it. With
  // `close`, no worker is started again: later work runs on the thread that
  // queues it (process shutdown: no new thread may start then). With
  // timeout_ms >= 0, waits at most that long for the worker to finish its
  // queue; false if it has not (it then returns on its own, unjoined until
  // the next stop()).
  bool stop(bool close = false, int64_t timeout_ms = -1);
  // In a forked child: the worker and the queued work belong to the parent.
  // Forgets them without touching their (possibly locked) state.
  void forgetAfterFork();

 private:
  void workerLoop();
  void pruneDone();
};

struct npudist::driver::EventObject {
  unsigned flags = 0;
  std::mutex mutex;
  bool recorded = false;
  int device = -1;  // of the stream it was last recorded on
  int64_t record_ns = 0;
  std::vector<TaskPtr> tasks;

  void record(StreamObject* stream);
  std::vector<TaskPtr> snapshot();
  bool complete();
  bool synchronize(std::string* error);
  // Time at which everything recorded had completed (valid once complete()).
  int64_t completionNs();
};
