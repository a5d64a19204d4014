#include "profiler/recorder.h"

#include <c10/util/ApproximateClock.h>

#include <sys/syscall.h>
#include <unistd.h>

#include <mutex>

#include "core/stream.h"

namespace npudist::profiler {

namespace detail {
std::atomic<int> g_active{0};
std::atomic<bool> g_step_trace{false};
}  // namespace detail

namespace {

std::mutex g_mutex;
std::vector<DeviceEvent>* g_events = nullptr;  // guarded by g_mutex; null outside a session

// Kineto pushes the correlation id of every CPU op it records on the thread
// that runs the op; npu kernels run on that thread, so the top of this stack
// is the op that issued them.
// Entries carry the session number: ops still open when a session stopped are
// never popped (the session is gone), and must not leak into the next one.
std::atomic<uint32_t> g_generation{0};
struct Entry {
  uint32_t generation;
  uint64_t id;
};
struct CorrelationStacks {
  std::vector<Entry> ops;
  std::vector<Entry> user;
};
thread_local CorrelationStacks t_stacks;

uint64_t top(std::vector<Entry>& s) {
  uint32_t gen = g_generation.load(std::memory_order_relaxed);
  while (!s.empty() && s.back().generation != gen) s.clear();
  return s.empty() ? 0 : s.back().id;
}

}  // namespace

int64_t nowNs() { return int64_t(c10::getTime()); }

int32_t hostThreadId() {
  thread_local int32_t tid = int32_t(syscall(SYS_gettid));
  return tid;
}

uint64_t currentCorrelation() { return top(t_stacks.ops); }
uint64_t currentUserCorrelation() { return top(t_stacks.user); }

std::vector<uint64_t> currentUserRanges() {
  std::vector<uint64_t> out;
  if (!top(t_stacks.user)) return out;
  out.reserve(t_stacks.user.size());
  for (const Entry& e : t_stacks.user) out.push_back(e.id);
  return out;
}

void pushCorrelation(uint64_t id, bool user) {
  auto& s = user ? t_stacks.user : t_stacks.ops;
  top(s);  // drops a previous session's leftovers
  s.push_back({g_generation.load(std::memory_order_relaxed), id});
}

void popCorrelation(bool user) {
  auto& s = user ? t_stacks.user : t_stacks.ops;
  if (!s.empty()) s.pop_back();
}

void record(DeviceEvent&& e) {
  std::lock_guard<std::mutex> g(g_mutex);
  if (g_events) g_events->push_back(std::move(e));
}

void beginSession() {
  std::lock_guard<std::mutex> g(g_mutex);
  if (!g_events) g_events = new std::vector<DeviceEvent>();
  g_events->clear();
  g_generation.fetch_add(1, std::memory_order_relaxed);
  detail::g_active.store(1, std::memory_order_relaxed);
}

std::vector<DeviceEvent> endSession() {
  std::lock_guard<std::mutex> g(g_mutex);
  detail::g_active.store(0, std::memory_order_relaxed);
  std::vector<DeviceEvent> out;
  if (g_events) {
    out.swap(*g_events);
    delete g_events;
    g_events = nullptr;
  }
  return out;
}

void setStepTrace(bool on) { detail::g_step_trace.store(on, std::memory_order_relaxed); }

void recordSync(int device, int64_t stream, const char* name,
                std::vector<std::pair<std::string, std::pair<std::string, bool>>> args) {
  if (!stepTrace() || device < 0) return;
  DeviceEvent e;
  e.kind = EventKind::kSync;
  e.device = device;
  e.stream = stream;
  e.correlation = currentCorrelation();
  e.host_tid = hostThreadId();
  e.start_ns = e.end_ns = nowNs();
  e.name = name;
  e.args = std::move(args);
  record(std::move(e));
}

void DeviceScope::begin(EventKind kind, int device, int64_t stream) {
  e_.kind = kind;
  e_.device = device;
  e_.stream = stream >= 0 ? stream : int64_t(core::currentStreamId(c10::DeviceIndex(device)));
  e_.correlation = currentCorrelation();
  e_.user_ranges = currentUserRanges();
  e_.host_tid = hostThreadId();
  e_.start_ns = nowNs();
}

void DeviceScope::end() {
  e_.end_ns = nowNs();
  record(std::move(e_));
}

}  // namespace npudist::profiler
