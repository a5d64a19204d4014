// The device core's one interface for deferred work: collectives, host
// functions and graph replays reach the driver only through it (docs/architecture.md,
// "Execution model": deferred work reaches the driver only through the device
// core; tests/test_layering.py checks it). Code above the core (csrc/hccl, graphs) never includes driver
// headers; a driver other than HostDriver changes nothing up here.
#pragma once

#include <c10/core/Stream.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace npudist::driver {
struct Task;
}

namespace npudist::core {

// A handle on one unit of deferred work. Copies share the work. Empty when
// default-constructed (work that ran inline has no task).
class DeferredTask {
 public:
  DeferredTask() = default;

  explicit operator bool() const { return bool(task_); }
  // True once the work finished (successfully or not). Never blocks.
  bool done() const;
  // Runs the work (after its dependencies) on this thread if nobody started
  // it, otherwise waits for it. False, with *error set, if it or a
  // dependency failed.
  bool complete(std::string* error) const;
  // Runs the work here if nobody claimed it, without completing its
  // dependencies (the caller knows they are complete). False if claimed.
  bool runIfUnclaimed() const;
  // Makes this task (not queued on any stream) depend on `other`, unless
  // this task is already done.
  void dependOn(const DeferredTask& other) const;

 private:
  friend DeferredTask wrapTask(std::shared_ptr<driver::Task> t);
  friend std::shared_ptr<driver::Task> unwrapTask(const DeferredTask& t);
  std::shared_ptr<driver::Task> task_;
};

// Queues `fn` on `stream` behind everything the stream has been made to wait
// for; it runs with `stream` current on its device. With tolerate_failed_deps
// the task runs even if earlier work on the stream failed. `after` (optional)
// runs on the same thread right after the task is done.
DeferredTask launchDeferredTask(const c10::Stream& stream, std::function<void()> fn, bool tolerate_failed_deps,
                                std::function<void()> after = {});

// A task queued on no stream: runs when someone completes it (or calls
// runIfUnclaimed). A collective's status task, which fails iff the
// collective failed, is one.
DeferredTask makeUnqueuedTask(std::function<void()> fn);

// Makes future work on `stream` wait for `tasks`.
void streamWaitTasks(const c10::Stream& stream, const std::vector<DeferredTask>& tasks);
// Makes future work on `waiter` wait for everything `waited` was made to wait for so far.
void streamWaitStream(const c10::Stream& waiter, const c10::Stream& waited);
// True when nothing is queued or pending on `stream`.
bool streamIdle(const c10::Stream& stream);
// Completes everything `stream` was made to wait for; false with *error if some of it failed.
bool drainStream(const c10::Stream& stream, std::string* error);

// While `stream` captures an npu graph, records `replay` into the graph
// instead of queuing anything, and returns true: each replay runs it once,
// in capture order, on the replaying thread with the replay's stream current
// (a captured collective is issued anew per replay). False otherwise.
bool captureDeferredWork(const c10::Stream& stream, const std::string& name, std::function<void()> replay);
// True while any npu graph capture is underway in the process (one relaxed load).
bool anyGraphCapture();

// Monotonic clock of the device core, in nanoseconds.
int64_t monotonicNs();

}  // namespace npudist::core
