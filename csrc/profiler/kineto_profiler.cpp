// Kineto session for npu device activity (see kineto_profiler.h).
//
// Kineto forwards the correlation id of every CPU op it records to the
// sessions of its child profilers (pushCorrelationId on the op's thread);
// recorder.cpp keeps them per thread, so each device event knows the CPU op
// that issued it. At processTrace the events become GenericTraceActivity
// objects: device = npu index (one trace process per npu), resource = stream
// id (one lane per stream), `linked` = the CPU op (PyTorch reads its
// correlation id as the
// event's linked correlation id: key_averages' device time per op).
// record_function ranges become GPU_USER_ANNOTATION activities spanning the
// device work issued inside them on the same thread, as CUDA shows them.
#include "profiler/kineto_profiler.h"

#include <libkineto.h>
#include <output_base.h>

#include <c10/util/Exception.h>

#include <unistd.h>

#include <algorithm>
#include <map>
#include <memory>
#include <tuple>

#include "profiler/recorder.h"

namespace npudist::profiler {
namespace {

std::atomic<int64_t> g_sessions_configured{0};

// The trace numbers an npu stream's lane (thread id and "stream" arg) from 1:
// torch.npu.Stream.stream_id + 1, so the default stream is 1. Trace tools
// (HTA, Kineto's own views) take stream 0 for "not a device stream", as CUDA
// traces never use it. The "stream_id" arg keeps c10's id.
int64_t laneOf(int64_t stream_id) { return stream_id + 1; }

libkineto::ActivityType activityTypeOf(EventKind k) {
  switch (k) {
    case EventKind::kMemcpy:
      return libkineto::ActivityType::GPU_MEMCPY;
    case EventKind::kKernel:
    case EventKind::kCollective:
    case EventKind::kGraphReplay:
      return libkineto::ActivityType::CONCURRENT_KERNEL;
    case EventKind::kLaunch:
    case EventKind::kSync:
      return libkineto::ActivityType::PRIVATEUSE1_RUNTIME;
  }
  return libkineto::ActivityType::CONCURRENT_KERNEL;
}

const char* categoryOf(EventKind k) {
  switch (k) {
    case EventKind::kKernel:
      return "kernel";
    case EventKind::kMemcpy:
      return "memcpy";
    case EventKind::kCollective:
      return "collective";
    case EventKind::kGraphReplay:
      return "graph";
    case EventKind::kLaunch:
      return "launch";
    case EventKind::kSync:
      return "sync";
  }
  return "kernel";
}

class NpuSession : public libkineto::IActivityProfilerSession {
 public:
  explicit NpuSession(bool annotations) : annotations_(annotations) {}
  ~NpuSession() override {
    if (recording_) endSession();
  }

  void start() override {
    // Kineto keeps the sessions of its last configuration and starts them again
    // for a later trace that asked for no device activity (a CPU-only profile):
    // a session records one trace only.
    if (spent_) return;
    spent_ = true;
    beginSession();
    recording_ = true;
    start_ns_ = nowNs();
    status_ = libkineto::TraceStatus::RECORDING;
  }

  void stop() override {
    if (recording_) events_ = endSession();
    recording_ = false;
    end_ns_ = nowNs();
    status_ = libkineto::TraceStatus::PROCESSING;
  }

  std::vector<std::string> errors() override { return {}; }

  void processTrace(libkineto::ActivityLogger& logger) override {
    processTrace(logger, [](int32_t) -> const libkineto::ITraceActivity* { return nullptr; }, 0, 0);
  }

  void processTrace(libkineto::ActivityLogger& logger, libkineto::getLinkedActivityCallback linked,
                    int64_t /*window_start*/, int64_t /*window_end*/) override {
    buffer_ = std::make_unique<libkineto::CpuTraceBuffer>();
    buffer_->span = libkineto::TraceSpan(start_ns_, end_ns_, "npu");
    buffer_->gpuOpCount = 0;
    std::map<int, std::set<int64_t>> lanes;  // device -> streams
    // record_function ranges on the device lanes: the span of the device work
    // issued inside each open range (on the issuing thread), per (range, device, stream).
    std::map<std::tuple<uint64_t, int, int64_t>, std::pair<int64_t, int64_t>> ranges;
    const int32_t pid = int32_t(getpid());
    // The host side of each piece of device work, on the thread that issued it
    // (PRIVATEUSE1_RUNTIME, args "correlation"): trace tools (HTA) tie device
    // work to CPU ops through such launch events, as through cudaLaunchKernel.
    // Synchronous work (kernels, copies, replays) occupies its thread for the
    // span it ran; a collective's launch is its hcclLaunch event.
    auto hostSide = [&](const DeviceEvent& e, const char* name) {
      buffer_->emplace_activity(buffer_->span, libkineto::ActivityType::PRIVATEUSE1_RUNTIME, name);
      libkineto::GenericTraceActivity& a = *buffer_->activities.back();
      a.startTime = e.start_ns;
      a.endTime = std::max(e.end_ns, e.start_ns);
      a.id = int32_t(e.correlation);
      a.device = pid;
      a.resource = e.host_tid;
      a.threadId = e.host_tid;
      a.linked = linked(int32_t(e.correlation));
      a.addMetadata("correlation", e.correlation);
    };
    for (DeviceEvent& e : events_) {
      if (e.kind == EventKind::kLaunch) {
        if (e.correlation) hostSide(e, e.name.c_str());
        continue;
      }
      if (e.correlation && e.kind != EventKind::kCollective && e.kind != EventKind::kSync)
        hostSide(e, e.kind == EventKind::kMemcpy        ? "npuMemcpy"
                    : e.kind == EventKind::kGraphReplay ? "npuGraphLaunch"
                                                        : "npuLaunchKernel");
      lanes[e.device].insert(e.stream);
      buffer_->emplace_activity(buffer_->span, activityTypeOf(e.kind), e.name);
      libkineto::GenericTraceActivity& a = *buffer_->activities.back();
      a.startTime = e.start_ns;
      a.endTime = std::max(e.end_ns, e.start_ns);
      a.id = int32_t(e.correlation);
      a.device = e.device;
      a.resource = int32_t(laneOf(e.stream));
      a.threadId = int32_t(laneOf(e.stream));
      a.linked = e.correlation ? linked(int32_t(e.correlation)) : nullptr;
      if (a.linked) {
        a.flow.id = uint32_t(e.correlation);
        a.flow.type = libkineto::kLinkAsyncCpuGpu;
        a.flow.start = 0;
      }
      a.addMetadataQuoted("category", categoryOf(e.kind));
      a.addMetadata("device", e.device);
      a.addMetadata("stream", laneOf(e.stream));
      a.addMetadata("stream_id", e.stream);
      a.addMetadata("correlation", e.correlation);
      for (auto& [k, v] : e.args) {
        if (v.second) {
          a.addMetadataQuoted(k, v.first);
        } else {
          a.addMetadata(k, v.first);
        }
      }
      if (e.kind != EventKind::kSync) buffer_->gpuOpCount++;
      for (uint64_t user : annotations_ ? e.user_ranges : std::vector<uint64_t>{}) {
        auto key = std::make_tuple(user, e.device, e.stream);
        auto it = ranges.find(key);
        if (it == ranges.end()) {
          ranges.emplace(key, std::make_pair(e.start_ns, e.end_ns));
        } else {
          it->second.first = std::min(it->second.first, e.start_ns);
          it->second.second = std::max(it->second.second, e.end_ns);
        }
      }
    }
    for (auto& [key, span] : ranges) {
      auto [user, device, stream] = key;
      const libkineto::ITraceActivity* cpu = linked(int32_t(user));
      if (!cpu) continue;
      buffer_->emplace_activity(buffer_->span, libkineto::ActivityType::GPU_USER_ANNOTATION, cpu->name());
      libkineto::GenericTraceActivity& a = *buffer_->activities.back();
      a.startTime = span.first;
      a.endTime = span.second;
      a.id = int32_t(user);
      a.device = device;
      a.resource = int32_t(laneOf(stream));
      a.threadId = int32_t(laneOf(stream));
      // Not linked: the range's CPU op already counts its ops' device time.
    }
    // Kineto keeps pointers to what is logged; the activities live in buffer_,
    // which it takes over (getTraceBuffer) and keeps until the trace is gone.
    for (const auto& a : buffer_->activities) logger.handleGenericActivity(*a);
    for (auto& [device, streams] : lanes) {
      logger.handleDeviceInfo(libkineto::DeviceInfo{device, 1000 + device, "npu " + std::to_string(device),
                                                    "npu " + std::to_string(device)},
                              start_ns_);
      for (int64_t s : streams)
        logger.handleResourceInfo(
            libkineto::ResourceInfo{laneOf(s), laneOf(s), device,
                                    "stream " + std::to_string(laneOf(s)) + " (stream_id " + std::to_string(s) + ")"},
            start_ns_);
    }
    events_.clear();
  }

  std::unique_ptr<libkineto::DeviceInfo> getDeviceInfo() override { return nullptr; }
  std::vector<libkineto::ResourceInfo> getResourceInfos() override { return {}; }
  std::unique_ptr<libkineto::CpuTraceBuffer> getTraceBuffer() override { return std::move(buffer_); }

  void pushCorrelationId(uint64_t id) override { pushCorrelation(id, false); }
  void popCorrelationId() override { popCorrelation(false); }
  void pushUserCorrelationId(uint64_t id) override { pushCorrelation(id, true); }
  void popUserCorrelationId() override { popCorrelation(true); }

  std::unordered_map<std::string, std::string> getMetadata() override { return {}; }

 private:
  bool annotations_;
  bool recording_ = false;
  bool spent_ = false;
  int64_t start_ns_ = 0, end_ns_ = 0;
  std::vector<DeviceEvent> events_;
  std::unique_ptr<libkineto::CpuTraceBuffer> buffer_;
};

const std::set<libkineto::ActivityType>& activities() {
  // What torch asks for under ProfilerActivity.PrivateUse1 (kineto_shim.cpp).
  static const std::set<libkineto::ActivityType> kTypes = {
      libkineto::ActivityType::GPU_MEMCPY,          libkineto::ActivityType::GPU_MEMSET,
      libkineto::ActivityType::CONCURRENT_KERNEL,   libkineto::ActivityType::GPU_USER_ANNOTATION,
      libkineto::ActivityType::PRIVATEUSE1_RUNTIME, libkineto::ActivityType::PRIVATEUSE1_DRIVER,
  };
  return kTypes;
}

}  // namespace

const std::string& NpuActivityProfiler::name() const {
  static const std::string kName = "npu";
  return kName;
}

const std::set<libkineto::ActivityType>& NpuActivityProfiler::availableActivities() const { return activities(); }

std::unique_ptr<libkineto::IActivityProfilerSession> NpuActivityProfiler::configure(
    const std::set<libkineto::ActivityType>& activity_types, const libkineto::Config& /*config*/) {
  // A CPU-only profile also asks for the PrivateUse1 runtime/driver types (host
  // side); only the device types say that npu activity is wanted.
  const bool wanted = activity_types.count(libkineto::ActivityType::CONCURRENT_KERNEL) ||
                      activity_types.count(libkineto::ActivityType::GPU_MEMCPY);
  if (!wanted) return nullptr;
  g_sessions_configured.fetch_add(1);
  return std::make_unique<NpuSession>(activity_types.count(libkineto::ActivityType::GPU_USER_ANNOTATION) > 0);
}

std::unique_ptr<libkineto::IActivityProfilerSession> NpuActivityProfiler::configure(
    int64_t /*ts_ms*/, int64_t /*duration_ms*/, const std::set<libkineto::ActivityType>& activity_types,
    const libkineto::Config& config) {
  // On-demand (dynolog) traces start when Kineto starts the session.
  return configure(activity_types, config);
}

int64_t sessionsConfigured() { return g_sessions_configured.load(); }

}  // namespace npudist::profiler
