#include "hccl/flight_recorder.h"
#include "util/env.h"

#include <c10/util/Exception.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include "hccl/group_stats.h"

namespace npudist::hccl {

int64_t wallNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

int64_t monoToWallNs(int64_t mono_ns) {
  static const int64_t offset = [] {
    timespec m;
    clock_gettime(CLOCK_MONOTONIC, &m);
    return wallNs() - (int64_t(m.tv_sec) * 1000000000 + m.tv_nsec);
  }();
  return mono_ns + offset;
}

namespace {
FlightRecorder::FrameCapture g_capture = nullptr;

size_t traceBufferSize() {
  return size_t(env::getInt("TORCH_HCCL_TRACE_BUFFER_SIZE", 2000, 0, 10000000));  // entries; 0: off
}
}  // namespace

FlightRecorder::FlightRecorder() : capacity_(traceBufferSize()) { ring_.resize(capacity_); }

FlightRecorder& FlightRecorder::get() {
  static FlightRecorder* fr = new FlightRecorder();  // never destroyed: used by threads at exit
  return *fr;
}

void FlightRecorder::setFrameCapture(FrameCapture f) { g_capture = f; }

bool FlightRecorder::captureFramesEnabled() {
  static const bool on = env::getBool("NPUDIST_HCCL_TRACE_FRAMES", false);
  return on && g_capture != nullptr;
}

std::vector<Frame> FlightRecorder::captureFrames() { return g_capture ? g_capture() : std::vector<Frame>{}; }

FrEntry* FlightRecorder::find(int64_t id) {
  if (id < 0 || !capacity_) return nullptr;
  FrEntry& e = ring_[size_t(id) % capacity_];
  return e.id == id ? &e : nullptr;
}

void FlightRecorder::started(int64_t id, int64_t start_mono_ns) {
  if (id < 0) return;
  const int64_t t = monoToWallNs(start_mono_ns);
  std::lock_guard<std::mutex> g(mutex_);
  if (FrEntry* e = find(id)) {
    e->state = FrEntry::kStarted;
    e->time_started_ns = t;
  }
}

void FlightRecorder::completed(int64_t id, int64_t start_mono_ns, int64_t end_mono_ns) {
  if (id < 0) return;
  const int64_t t = monoToWallNs(end_mono_ns);
  std::lock_guard<std::mutex> g(mutex_);
  if (FrEntry* e = find(id)) {
    e->state = FrEntry::kCompleted;
    e->time_completed_ns = t;
    if (!e->time_started_ns) e->time_started_ns = monoToWallNs(start_mono_ns);
    e->duration_ms = double(end_mono_ns - start_mono_ns) / 1e6;
    e->retired = true;
  }
}

size_t FlightRecorder::size() {
  std::lock_guard<std::mutex> g(mutex_);
  return size_t(std::min<int64_t>(next_id_, int64_t(capacity_)));
}

namespace {
PyValue sizesValue(const std::vector<std::vector<int64_t>>& sizes) {
  PyValue l = PyValue::list();
  for (const auto& dims : sizes) {
    PyValue d = PyValue::list();
    for (int64_t x : dims) d.append(PyValue::integer(x));
    l.append(std::move(d));
  }
  return l;
}
PyValue strings(const std::vector<const char*>& v) {
  PyValue l = PyValue::list();
  for (const char* s : v) l.append(PyValue::str(s));
  return l;
}
const char* stateName(FrEntry::State s) {
  switch (s) {
    case FrEntry::kScheduled: return "scheduled";
    case FrEntry::kStarted: return "started";
    default: return "completed";
  }
}
}  // namespace

std::string FlightRecorder::pickle() {
  PyValue root = PyValue::dict();
  root.set("version", PyValue::str("2.10"));
  root.set("comm_lib_version", PyValue::str("npudist-hccl"));
  PyValue pg_config = PyValue::dict(), pg_status = PyValue::dict();
  for (const auto& g : liveGroups()) {
    PyValue c = PyValue::dict();
    c.set("name", PyValue::str(g->name));
    c.set("desc", PyValue::str(g->desc()));
    std::string ranks = "[";
    for (int i = 0; i < g->size; ++i) {
      const int64_t global = g->global_ranks.empty() ? i : g->global_ranks[size_t(i)];
      ranks += (i ? ", " : "") + std::to_string(global);
    }
    c.set("ranks", PyValue::str(ranks + "]"));
    pg_config.set(g->name, std::move(c));
    auto p = g->progress();
    PyValue s = PyValue::dict();
    s.set("last_enqueued_collective", PyValue::integer(int64_t(p.enqueued)));
    s.set("last_started_collective", PyValue::integer(int64_t(p.started)));
    s.set("last_completed_collective", PyValue::integer(int64_t(p.completed)));
    pg_status.set(g->name, std::move(s));
  }
  root.set("pg_config", std::move(pg_config));
  root.set("pg_status", std::move(pg_status));
  PyValue entries = PyValue::list();
  {
    std::lock_guard<std::mutex> g(mutex_);
    const int64_t first = std::max<int64_t>(0, next_id_ - int64_t(capacity_));
    for (int64_t id = first; id < next_id_; ++id) {
      const FrEntry& e = ring_[size_t(id) % capacity_];
      if (e.id != id) continue;
      PyValue d = PyValue::dict();
      d.set("record_id", PyValue::integer(e.id));
      d.set("pg_id", PyValue::integer(int64_t(e.pg_id)));
      d.set("process_group", PyValue::tuple({PyValue::str(e.pg_name), PyValue::str(e.pg_desc)}));
      d.set("thread_id", PyValue::str(std::to_string(e.thread_id)));
      d.set("thread_name", PyValue::str("hccl"));
      d.set("collective_seq_id", PyValue::integer(int64_t(e.collective_seq_id)));
      d.set("p2p_seq_id", PyValue::integer(int64_t(e.p2p_seq_id)));
      d.set("op_id", PyValue::integer(int64_t(e.op_id)));
      d.set("profiling_name", PyValue::str(e.profiling_name));
      d.set("time_created_ns", PyValue::integer(e.time_created_ns));
      if (e.duration_ms >= 0) d.set("duration_ms", PyValue::real(e.duration_ms));
      d.set("input_sizes", sizesValue(e.input_sizes));
      d.set("input_dtypes", strings(e.input_dtypes));
      d.set("output_sizes", sizesValue(e.output_sizes));
      d.set("output_dtypes", strings(e.output_dtypes));
      d.set("state", PyValue::str(stateName(e.state)));
      d.set("time_discovered_started_ns", e.time_started_ns ? PyValue::integer(e.time_started_ns) : PyValue::none());
      d.set("time_discovered_completed_ns",
            e.time_completed_ns ? PyValue::integer(e.time_completed_ns) : PyValue::none());
      d.set("retired", PyValue::boolean(e.retired));
      d.set("timeout_ms", PyValue::integer(e.timeout_ms));
      d.set("is_p2p", PyValue::boolean(e.is_p2p));
      PyValue frames = PyValue::list();
      for (const auto& f : e.frames) {
        PyValue fr = PyValue::dict();
        fr.set("name", PyValue::str(f.name));
        fr.set("filename", PyValue::str(f.filename));
        fr.set("line", PyValue::integer(f.line));
        frames.append(std::move(fr));
      }
      d.set("frames", std::move(frames));
      entries.append(std::move(d));
    }
  }
  root.set("entries", std::move(entries));
  return root.pickle();
}

std::string FlightRecorder::defaultPath(int global_rank) {
  const std::string prefix = env::getString("TORCH_HCCL_DEBUG_INFO_TEMP_FILE", "/tmp/hccl_trace_rank_");
  return prefix + std::to_string(global_rank);
}

std::string FlightRecorder::writeTo(const std::string& path) {
  const std::string bytes = pickle();
  const std::string tmp = path + ".tmp" + std::to_string(getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return "cannot create " + tmp + ": " + std::strerror(errno);
  size_t off = 0;
  while (off < bytes.size()) {
    ssize_t n = ::write(fd, bytes.data() + off, bytes.size() - off);
    if (n < 0) {
      if (errno == EINTR) continue;
      std::string why = "cannot write " + tmp + ": " + std::strerror(errno);
      ::close(fd);
      ::unlink(tmp.c_str());
      return why;
    }
    off += size_t(n);
  }
  ::close(fd);
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    std::string why = "cannot rename " + tmp + " to " + path + ": " + std::strerror(errno);
    ::unlink(tmp.c_str());
    return why;
  }
  return "";
}

}  // namespace npudist::hccl
