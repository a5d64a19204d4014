#include "core/deferred.h"

#include "core/graph/capture.h"
#include "core/stream.h"
#include "driver/stream_queue.h"

namespace npudist::core {

DeferredTask wrapTask(std::shared_ptr<driver::Task> t) {
  DeferredTask d;
  d.task_ = std::move(t);
  return d;
}

std::shared_ptr<driver::Task> unwrapTask(const DeferredTask& t) { return t.task_; }

bool DeferredTask::done() const { return !task_ || task_->done(); }

bool DeferredTask::complete(std::string* error) const { return !task_ || driver::completeTask(task_, error); }

bool DeferredTask::runIfUnclaimed() const { return task_ && driver::runIfUnclaimed(task_); }

void DeferredTask::dependOn(const DeferredTask& other) const {
  if (!task_ || !other.task_) return;
  std::lock_guard<std::mutex> g(task_->deps_mutex);
  if (!task_->done()) task_->deps.push_back(other.task_);
}

DeferredTask launchDeferredTask(const c10::Stream& stream, std::function<void()> fn, bool tolerate_failed_deps,
                                std::function<void()> after) {
  return wrapTask(launchDriverTask(stream, std::move(fn), tolerate_failed_deps, std::move(after)));
}

DeferredTask makeUnqueuedTask(std::function<void()> fn) {
  auto t = std::make_shared<driver::Task>();
  t->fn = std::move(fn);
  return wrapTask(std::move(t));
}

void streamWaitTasks(const c10::Stream& stream, const std::vector<DeferredTask>& tasks) {
  std::vector<std::shared_ptr<driver::Task>> raw;
  raw.reserve(tasks.size());
  for (const auto& t : tasks)
    if (t) raw.push_back(unwrapTask(t));
  if (!raw.empty()) driverStream(stream)->addDependencies(raw);
}

void streamWaitStream(const c10::Stream& waiter, const c10::Stream& waited) {
  driverStream(waiter)->addDependencies(driverStream(waited)->frontierSnapshot());
}

bool streamIdle(const c10::Stream& stream) { return driverStream(stream)->idle(); }

bool drainStream(const c10::Stream& stream, std::string* error) { return driverStream(stream)->synchronize(error); }

int64_t monotonicNs() { return driver::monotonicNs(); }

bool anyGraphCapture() { return graph::anyCapture(); }

bool captureDeferredWork(const c10::Stream& stream, const std::string& name, std::function<void()> replay) {
  if (!graph::anyCapture() || inDeferredWork()) return false;
  graph::Capture* c = graph::captureOf(stream.device_index(), stream.id());
  if (!c) return false;
  graph::recordHost(*c, name, std::move(replay), stream.id());
  return true;
}

}  // namespace npudist::core
