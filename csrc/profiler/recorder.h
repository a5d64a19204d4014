// Device activity of the npu for torch.profiler (docs/profiling.md).
//
// The device core, the graph replayer and hccl report what ran on the device
// here while a profiler session is open; the Kineto activity profiler
// (kineto_profiler.cpp) hands the events to torch.profiler when the session
// stops. With no session open every hook costs one relaxed atomic load.
//
// Timestamps are c10::getTime() nanoseconds, the clock torch.profiler puts its
// CPU events on, so device and CPU events line up; it is the host's clock, so
// the traces of several ranks of one host share it.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace npudist::profiler {

enum class EventKind : uint8_t {
  kKernel,       // a kernel run by the fallback (or a native op) on an npu stream
  kMemcpy,       // a copy between cpu and npu, or within npu memory
  kCollective,   // an hccl collective on its communicator's stream
  kGraphReplay,  // an npu graph replay
  kLaunch,       // host side: a thread issuing deferred device work (a collective)
  kSync,         // an instant on a stream: an event recorded, a stream made to wait (step traces only)
};

struct DeviceEvent {
  EventKind kind = EventKind::kKernel;
  int device = 0;
  int64_t stream = 0;    // c10::StreamId of the lane the work ran on
  int64_t start_ns = 0;  // c10::getTime() ns
  int64_t end_ns = 0;
  uint64_t correlation = 0;  // the issuing CPU op's profiler correlation id; 0: none
  int32_t host_tid = 0;      // the issuing thread (Linux thread id, as torch.profiler's CPU events)
  // The record_function ranges open on the issuing thread, outermost first.
  std::vector<uint64_t> user_ranges;
  std::string name;
  // Extra fields for the trace's "args" (value already formatted; true = quote it).
  std::vector<std::pair<std::string, std::pair<std::string, bool>>> args;
};

namespace detail {
extern std::atomic<int> g_active;
extern std::atomic<bool> g_step_trace;
}  // namespace detail

// True while a profiler session that wants npu activity is recording.
inline bool active() { return detail::g_active.load(std::memory_order_relaxed) > 0; }

// True while recording for a step trace (npudist.plan, docs/plan.md): kernels
// then also carry their inputs' and outputs' shapes, dtypes, strides and bytes,
// and stream synchronisation is recorded (kSync events). Off for plain
// torch.profiler sessions, which keep their cost and their rows unchanged.
inline bool stepTrace() { return active() && detail::g_step_trace.load(std::memory_order_relaxed); }
void setStepTrace(bool on);

// Records a kSync instant `name` on (device, stream) with `args`, when stepTrace().
void recordSync(int device, int64_t stream, const char* name,
                std::vector<std::pair<std::string, std::pair<std::string, bool>>> args);

// c10::getTime() in ns (the profiler's clock).
int64_t nowNs();

// The calling thread's innermost CPU op / record_function range known to the
// profiler (pushed by Kineto through the session), 0 when none.
uint64_t currentCorrelation();
uint64_t currentUserCorrelation();          // innermost
std::vector<uint64_t> currentUserRanges();  // outermost first
void pushCorrelation(uint64_t id, bool user);
void popCorrelation(bool user);

// Keeps an event of the session (thread-safe). Dropped when no session records.
void record(DeviceEvent&& e);

// Linux thread id of the calling thread (cached per thread).
int32_t hostThreadId();

// Opens / closes the recording window; endSession returns the events kept.
void beginSession();
std::vector<DeviceEvent> endSession();

// Times a piece of device work done synchronously on this thread: records one
// event from construction to destruction, attributed to the CPU op open at
// construction. Does nothing (no clock read, no allocation) when not active().
class DeviceScope {
 public:
  // stream -1: the device's current stream. device -1 (work on cpu tensors): nothing recorded.
  DeviceScope(EventKind kind, int device, int64_t stream = -1) : on_(active() && device >= 0) {
    if (__builtin_expect(on_, 0)) begin(kind, device, stream);
  }
  ~DeviceScope() {
    if (on_) end();
  }
  DeviceScope(const DeviceScope&) = delete;
  DeviceScope& operator=(const DeviceScope&) = delete;

  bool on() const { return on_; }
  DeviceEvent& event() { return e_; }
  // Adds a trace arg; call only when on().
  void arg(const char* key, std::string value, bool quoted = false) {
    e_.args.emplace_back(key, std::make_pair(std::move(value), quoted));
  }

 private:
  void begin(EventKind kind, int device, int64_t stream);
  void end();
  bool on_;
  DeviceEvent e_;
};

}  // namespace npudist::profiler
