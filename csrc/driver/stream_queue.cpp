#include "driver/driver.h"
#include "driver/stream_queue.h"

#include <pthread.h>
#include <sched.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <new>

namespace npudist::driver {

int64_t monotonicNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

namespace {

// With more ranks than cores a pure spin starves the thread being waited
// for, so spin briefly, yield a little, then sleep on the futex.
void waitUntilDone(Task& task) {
  for (int i = 0; i < 200; ++i) {
    if (task.done()) return;
  }
  for (int i = 0; i < 20; ++i) {
    if (task.done()) return;
    sched_yield();
  }
  int s = task.state.load(std::memory_order_acquire);
  while (s != Task::kDone) {
    task.state.wait(s, std::memory_order_acquire);
    s = task.state.load(std::memory_order_acquire);
  }
}

void runClaimed(Task& task) {
  task.runner = std::this_thread::get_id();
  // The function (and what it captured) is destroyed only after the task is
  // done: a destructor may need a lock (the GIL, to drop a tensor Python also
  // owns) held by a thread that waits for this very task.
  std::function<void()> fn = std::move(task.fn);
  std::function<void()> after = std::move(task.after);
  task.fn = nullptr;
  task.after = nullptr;
  try {
    fn();
  } catch (const std::exception& e) {
    task.error = e.what();
  } catch (...) {
    task.error = "unknown exception in deferred work";
  }
  std::vector<TaskPtr> deps;  // finished; released after the task is done too
  {
    std::lock_guard<std::mutex> g(task.deps_mutex);
    deps.swap(task.deps);
  }
  task.done_ns.store(monotonicNs(), std::memory_order_relaxed);
  task.state.store(Task::kDone, std::memory_order_release);
  task.state.notify_all();
  if (after) {
    try {
      after();
    } catch (...) {
      // the task's outcome is already published; nobody to report to
    }
  }
}

}  // namespace

bool completeTask(const TaskPtr& task, std::string* error) {
  if (!task->done()) {
    for (const TaskPtr& dep : task->depsSnapshot()) {
      std::string dep_error;
      if (!completeTask(dep, &dep_error) && !task->tolerate_failed_deps) {
        *error = dep_error;
        return false;
      }
    }
    int expected = Task::kPending;
    if (task->state.compare_exchange_strong(expected, Task::kRunning, std::memory_order_acq_rel)) {
      runClaimed(*task);
    } else {
      if (expected == Task::kRunning && task->runner == std::this_thread::get_id()) {
        *error =
            "deadlock: a stream waits for deferred work that is running further up this "
            "thread's own stack (deferred work must not wait on its own stream)";
        return false;
      }
      waitUntilDone(*task);
    }
  }
  if (!task->error.empty()) {
    *error = "deferred work failed: " + task->error;
    return false;
  }
  return true;
}

bool runIfUnclaimed(const TaskPtr& task) {
  int expected = Task::kPending;
  if (!task->state.compare_exchange_strong(expected, Task::kRunning, std::memory_order_acq_rel)) return false;
  runClaimed(*task);
  return true;
}

// ---------------------------------------------------------------- StreamObject

TaskPtr StreamObject::enqueue(std::function<void()> fn, bool tolerate_failed_deps, std::function<void()> after) {
  auto task = std::make_shared<Task>();
  task->fn = std::move(fn);
  task->after = std::move(after);
  task->tolerate_failed_deps = tolerate_failed_deps;
  std::unique_lock<std::mutex> g(mutex);
  task->deps = std::move(frontier);
  frontier.assign(1, task);
  has_pending.store(true, std::memory_order_release);
  if (closed) {
    // After process shutdown no thread may start (Python is finalizing):
    // the work runs here, in order, as a caller that helps would run it.
    g.unlock();
    std::string ignored;  // failures reach whoever waits on the task
    completeTask(task, &ignored);
    return task;
  }
  queue.push_back(task);
  stopping = false;
  if (!worker_running) {
    // A stopped worker has left its loop (and released the mutex): joining it is immediate.
    if (worker.joinable() && worker_pid == getpid()) worker.join();
    worker = std::thread([this] { workerLoop(); });
    worker_pid = getpid();
    worker_running = true;
  }
  queue_cv.notify_one();
  return task;
}

void StreamObject::workerLoop() {
  pthread_setname_np(pthread_self(), "npu-stream");  // tests and ps/top find our threads by name
  std::unique_lock<std::mutex> lock(mutex);
  while (true) {
    queue_cv.wait(lock, [this] { return stopping || !queue.empty(); });
    if (queue.empty()) {  // stopping, drained
      worker_running = false;
      queue_cv.notify_all();  // stop() may wait for this
      return;
    }
    TaskPtr task = std::move(queue.front());
    queue.pop_front();
    lock.unlock();
    std::string ignored;  // failures are reported to whoever waits on the task
    completeTask(task, &ignored);
    lock.lock();
  }
}

void StreamObject::addDependencies(const std::vector<TaskPtr>& tasks) {
  std::lock_guard<std::mutex> g(mutex);
  for (const TaskPtr& t : tasks) {
    if (!t->done()) frontier.push_back(t);
  }
  if (!frontier.empty()) has_pending.store(true, std::memory_order_release);
}

std::vector<TaskPtr> StreamObject::frontierSnapshot() {
  std::lock_guard<std::mutex> g(mutex);
  return frontier;
}

void StreamObject::pruneDone() {
  std::lock_guard<std::mutex> g(mutex);
  frontier.erase(std::remove_if(frontier.begin(), frontier.end(), [](const TaskPtr& t) { return t->done(); }),
                 frontier.end());
  if (frontier.empty()) has_pending.store(false, std::memory_order_release);
}

bool StreamObject::synchronize(std::string* error) {
  if (!has_pending.load(std::memory_order_acquire)) return true;
  bool ok = true;
  for (const TaskPtr& t : frontierSnapshot()) {
    if (!completeTask(t, error)) ok = false;
  }
  pruneDone();
  return ok;
}

bool StreamObject::idle() {
  if (!has_pending.load(std::memory_order_acquire)) return true;
  for (const TaskPtr& t : frontierSnapshot()) {
    if (!t->done()) return false;
  }
  return true;
}

void StreamObject::requestStop() {
  std::lock_guard<std::mutex> g(mutex);
  stopping = true;
  queue_cv.notify_all();
}

bool StreamObject::stop(bool close, int64_t timeout_ms) {
  std::thread t;
  {
    std::unique_lock<std::mutex> g(mutex);
    stopping = true;
    if (close) closed = true;
    queue_cv.notify_all();
    if (worker.joinable() && worker_pid != getpid()) {
      new (&worker) std::thread();  // a parent's thread (forked child): forget the handle, never join it
      worker_running = false;
      return true;
    }
    if (worker.get_id() == std::this_thread::get_id()) return false;  // from its own task: it returns once idle
    if (timeout_ms >= 0 && worker_running &&
        !queue_cv.wait_for(g, std::chrono::milliseconds(timeout_ms), [this] { return !worker_running; }))
      return false;  // still busy: it returns on its own once the queue is empty
    t = std::move(worker);
  }
  if (t.joinable()) t.join();
  return true;
}

void StreamObject::forgetAfterFork() {
  // Runs in the child right after fork(), single-threaded. The parent's lock
  // may have been held at fork(): fresh ones replace it. The thread handle
  // names a thread of the parent (destroying it joinable would terminate).
  // The parent's tasks are leaked on purpose: running or destroying what they
  // captured (tensors, futures, peers' collectives) in the child is not safe.
  new (&mutex) std::mutex();
  new (&queue_cv) std::condition_variable();
  new (&worker) std::thread();
  new std::deque<TaskPtr>(std::move(queue));
  queue.clear();
  new std::vector<TaskPtr>(std::move(frontier));
  frontier.clear();
  has_pending.store(false, std::memory_order_release);
  worker_pid = 0;
  worker_running = false;
  stopping = false;
}

// ----------------------------------------------------------------- EventObject

void EventObject::record(StreamObject* stream) {
  std::vector<TaskPtr> now = stream->frontierSnapshot();
  std::lock_guard<std::mutex> g(mutex);
  tasks = std::move(now);
  recorded = true;
  device = stream->device;
  record_ns = monotonicNs();
}

std::vector<TaskPtr> EventObject::snapshot() {
  std::lock_guard<std::mutex> g(mutex);
  return tasks;
}

bool EventObject::complete() {
  for (const TaskPtr& t : snapshot()) {
    if (!t->done()) return false;
  }
  return true;
}

bool EventObject::synchronize(std::string* error) {
  for (const TaskPtr& t : snapshot()) {
    if (!completeTask(t, error)) return false;
  }
  return true;
}

int64_t EventObject::completionNs() {
  std::lock_guard<std::mutex> g(mutex);
  int64_t t = record_ns;
  for (const TaskPtr& task : tasks) t = std::max(t, task->done_ns.load(std::memory_order_relaxed));
  return t;
}

}  // namespace npudist::driver
