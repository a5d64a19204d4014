#include "hccl/flight_recorder.h"
#include "util/env.h"

#include <c10/macros/Macros.h>
#include <c10/util/Exception.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <pthread.h>
#include <time.h>
#include <unistd.h>

#include "hccl/group_stats.h"
#include "hccl/pickle.h"

namespace npudist::hccl {

int64_t wallNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

const int64_t kMonoToWallOffsetNs = [] {
  timespec m;
  clock_gettime(CLOCK_MONOTONIC, &m);
  return wallNs() - (int64_t(m.tv_sec) * 1000000000 + m.tv_nsec);
}();

namespace {
FlightRecorder::FrameCapture g_capture = nullptr;

size_t traceBufferSize() {
  return size_t(env::getInt("TORCH_HCCL_TRACE_BUFFER_SIZE", 2000, 0, 10000000));  // entries; 0: off
}
}  // namespace

FlightRecorder::FlightRecorder() : capacity_(traceBufferSize()) {
  if (capacity_) {
    ring_.reset(new FrEntry[capacity_]);
    side_.resize(capacity_);
  }
}

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

void FlightRecorder::describeGroup(uint64_t pg_id, const std::string& name, int group_rank) {
  std::lock_guard<std::mutex> g(groups_mutex_);
  GroupNames& n = groups_[pg_id];
  n.name = name;
  n.rank = group_rank;
}

void FlightRecorder::setGroupDesc(uint64_t pg_id, const std::string& desc) {
  std::lock_guard<std::mutex> g(groups_mutex_);
  groups_[pg_id].desc = desc;
}

FlightRecorder::GroupNames FlightRecorder::groupNames(uint64_t pg_id) {
  std::lock_guard<std::mutex> g(groups_mutex_);
  auto it = groups_.find(pg_id);
  return it == groups_.end() ? GroupNames{} : it->second;
}

FrEntry* FlightRecorder::find(int64_t id) {
  if (id < 0 || !capacity_) return nullptr;
  FrEntry& e = ring_[size_t(id) % capacity_];
  return e.id == id ? &e : nullptr;
}

namespace {

// Describes the defined tensors of `ins` then `outs` in the entry; false if
// they do not fit (then nothing inline is meaningful).
bool describeInline(FrEntry& e, const std::vector<at::Tensor>& ins, const std::vector<at::Tensor>& outs) {
  int nt = 0, nd = 0;
  // (In-place collectives pass one list as both.)
  const std::vector<at::Tensor>* lists[2] = {&ins, &outs};
  for (int l = 0; l < 2; ++l) {
    for (const auto& t : *lists[l]) {
      if (!t.defined()) continue;
      const auto sizes = t.sizes();
      if (nt == FrEntry::kInlineTensors || nd + int(sizes.size()) > FrEntry::kInlineDims) return false;
      e.ndim[nt] = uint8_t(sizes.size());
      e.dtype[nt] = uint8_t(t.scalar_type());
      for (int64_t d : sizes) e.dims[nd++] = d;
      ++nt;
    }
    if (l == 0) e.n_in = uint8_t(nt);
  }
  e.n_out = uint8_t(nt - e.n_in);
  return true;
}

void describeSide(FrSide& s, const std::vector<at::Tensor>& ins, const std::vector<at::Tensor>& outs) {
  auto fill = [](const std::vector<at::Tensor>& ts, std::vector<std::vector<int64_t>>& sizes,
                 std::vector<uint8_t>& dtypes) {
    sizes.clear();
    dtypes.clear();
    for (const auto& t : ts) {
      if (!t.defined()) continue;
      sizes.emplace_back(t.sizes().begin(), t.sizes().end());
      dtypes.push_back(uint8_t(t.scalar_type()));
    }
  };
  fill(ins, s.input_sizes, s.input_dtypes);
  fill(outs, s.output_sizes, s.output_dtypes);
}

}  // namespace

int64_t FlightRecorder::record(const FrRecord& r, const std::vector<at::Tensor>& inputs,
                               const std::vector<at::Tensor>& outputs, std::vector<Frame>* frames) {
  if (!capacity_) return -1;
  // The entry is made here and copied into its slot under the lock.
  FrEntry e;
  e.collective_seq_id = r.collective_seq;
  e.p2p_seq_id = r.p2p_seq;
  e.op_id = r.op_id;
  e.time_created_ns = r.created_ns;
  if (r.started) {
    e.state = FrEntry::kStarted;
    e.time_started_ns = r.created_ns;
  }
  e.pg_id = uint32_t(r.pg_id);
  e.kind = int8_t(r.kind);
  e.flags = uint8_t((r.is_p2p ? FrEntry::kP2P : 0) | (r.desc_known ? FrEntry::kDescKnown : 0));
  e.timeout_ms = r.timeout_ms;
  e.thread_id = uint64_t(pthread_self());
  e.peer = int32_t(r.peer);
  const bool fits = describeInline(e, inputs, outputs);
  if (C10_UNLIKELY(!fits || (frames && !frames->empty()))) return recordWithSide(e, inputs, outputs, !fits, frames);
  std::lock_guard<SpinLock> g(lock_);
  const int64_t id = next_id_++;
  e.id = id;
  ring_[size_t(id) % capacity_] = e;
  return id;
}

C10_NOINLINE int64_t FlightRecorder::recordWithSide(FrEntry& e, const std::vector<at::Tensor>& inputs,
                                                    const std::vector<at::Tensor>& outputs, bool spilled,
                                                    std::vector<Frame>* frames) {
  auto side = std::make_unique<FrSide>();
  if (spilled) {
    describeSide(*side, inputs, outputs);
    e.flags |= FrEntry::kSpilledShapes;
    e.n_in = e.n_out = 0;
  }
  if (frames && !frames->empty()) {
    side->frames = std::move(*frames);
    e.flags |= FrEntry::kHasFrames;
  }
  int64_t id;
  {
    std::lock_guard<SpinLock> g(lock_);
    id = next_id_++;
    e.id = id;
    const size_t slot = size_t(id) % capacity_;
    ring_[slot] = e;
    side_[slot].swap(side);  // the slot's old side data is freed below, unlocked
  }
  return id;
}

void FlightRecorder::started(int64_t id, int64_t start_mono_ns) {
  if (id < 0) return;
  const int64_t t = monoToWallNs(start_mono_ns);
  std::lock_guard<SpinLock> g(lock_);
  if (FrEntry* e = find(id)) {
    e->state = FrEntry::kStarted;
    e->time_started_ns = t;
  }
}

void FlightRecorder::completed(int64_t id, int64_t start_mono_ns, int64_t end_mono_ns) {
  if (id < 0) return;
  const int64_t t = monoToWallNs(end_mono_ns), s = monoToWallNs(start_mono_ns);
  std::lock_guard<SpinLock> g(lock_);
  if (FrEntry* e = find(id)) {
    e->state = FrEntry::kCompleted;
    e->time_completed_ns = t;
    if (!e->time_started_ns) e->time_started_ns = s;
  }
}

size_t FlightRecorder::size() {
  std::lock_guard<SpinLock> g(lock_);
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
PyValue dtypeNames(const std::vector<uint8_t>& v) {
  PyValue l = PyValue::list();
  for (uint8_t s : v) l.append(PyValue::str(c10::toString(c10::ScalarType(s))));
  return l;
}
const char* stateName(uint8_t s) {
  switch (s) {
    case FrEntry::kScheduled:
      return "scheduled";
    case FrEntry::kStarted:
      return "started";
    default:
      return "completed";
  }
}
// An entry and what it has in the side store, copied out of the ring.
struct Copied {
  FrEntry e;
  FrSide side;
};
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
  // Copied out under the lock (plain entries; the side store only where
  // used), turned into Python values after.
  std::vector<Copied> copies;
  if (capacity_) {
    std::lock_guard<SpinLock> g(lock_);
    const int64_t first = std::max<int64_t>(0, next_id_ - int64_t(capacity_));
    copies.reserve(size_t(next_id_ - first));
    for (int64_t id = first; id < next_id_; ++id) {
      const size_t slot = size_t(id) % capacity_;
      const FrEntry& e = ring_[slot];
      if (e.id != id) continue;
      copies.push_back(Copied{e, {}});
      if ((e.flags & (FrEntry::kSpilledShapes | FrEntry::kHasFrames)) && side_[slot]) {
        const FrSide& s = *side_[slot];
        Copied& c = copies.back();
        if (e.flags & FrEntry::kSpilledShapes) {
          c.side.input_sizes = s.input_sizes;
          c.side.output_sizes = s.output_sizes;
          c.side.input_dtypes = s.input_dtypes;
          c.side.output_dtypes = s.output_dtypes;
        }
        if (e.flags & FrEntry::kHasFrames) c.side.frames = s.frames;
      }
    }
  }
  std::map<uint64_t, GroupNames> names;
  PyValue entries = PyValue::list();
  for (Copied& c : copies) {
    const FrEntry& e = c.e;
    auto it = names.find(e.pg_id);
    if (it == names.end()) it = names.emplace(e.pg_id, groupNames(e.pg_id)).first;
    const GroupNames& gn = it->second;
    if (!(e.flags & FrEntry::kSpilledShapes)) {
      // Unpack the inline shapes into the form the side store has.
      int nd = 0;
      for (int i = 0; i < e.n_in + e.n_out; ++i) {
        auto& sizes = i < e.n_in ? c.side.input_sizes : c.side.output_sizes;
        auto& dtypes = i < e.n_in ? c.side.input_dtypes : c.side.output_dtypes;
        sizes.emplace_back(e.dims + nd, e.dims + nd + e.ndim[i]);
        dtypes.push_back(e.dtype[i]);
        nd += e.ndim[i];
      }
    }
    const bool is_p2p = e.flags & FrEntry::kP2P;
    std::string profiling_name = opKindProfilingName(e.kind);
    if (e.kind == kSendKind) profiling_name += c10::str(" ", gn.rank, "->", e.peer);
    if (e.kind == kRecvKind && e.peer >= 0) profiling_name += c10::str(" ", gn.rank, "<-", e.peer);  // -1: any source
    PyValue d = PyValue::dict();
    d.set("record_id", PyValue::integer(e.id));
    d.set("pg_id", PyValue::integer(int64_t(e.pg_id)));
    d.set("process_group", PyValue::tuple({PyValue::str(gn.name),
                                           PyValue::str((e.flags & FrEntry::kDescKnown) ? gn.desc : "undefined")}));
    d.set("thread_id", PyValue::str(std::to_string(e.thread_id)));
    d.set("thread_name", PyValue::str("hccl"));
    d.set("collective_seq_id", PyValue::integer(int64_t(e.collective_seq_id)));
    d.set("p2p_seq_id", PyValue::integer(int64_t(e.p2p_seq_id)));
    d.set("op_id", PyValue::integer(int64_t(e.op_id)));
    d.set("profiling_name", PyValue::str(profiling_name));
    d.set("time_created_ns", PyValue::integer(e.time_created_ns));
    // Both times come from the same clock offset, so this is end - start of the monotonic clock.
    if (e.state == FrEntry::kCompleted)
      d.set("duration_ms", PyValue::real(double(e.time_completed_ns - e.time_started_ns) / 1e6));
    d.set("input_sizes", sizesValue(c.side.input_sizes));
    d.set("input_dtypes", dtypeNames(c.side.input_dtypes));
    d.set("output_sizes", sizesValue(c.side.output_sizes));
    d.set("output_dtypes", dtypeNames(c.side.output_dtypes));
    d.set("state", PyValue::str(stateName(e.state)));
    d.set("time_discovered_started_ns", e.time_started_ns ? PyValue::integer(e.time_started_ns) : PyValue::none());
    d.set("time_discovered_completed_ns",
          e.time_completed_ns ? PyValue::integer(e.time_completed_ns) : PyValue::none());
    d.set("retired", PyValue::boolean(e.state == FrEntry::kCompleted));
    d.set("timeout_ms", PyValue::integer(e.timeout_ms));
    d.set("is_p2p", PyValue::boolean(is_p2p));
    PyValue frames = PyValue::list();
    for (const auto& f : c.side.frames) {
      PyValue fr = PyValue::dict();
      fr.set("name", PyValue::str(f.name));
      fr.set("filename", PyValue::str(f.filename));
      fr.set("line", PyValue::integer(f.line));
      frames.append(std::move(fr));
    }
    d.set("frames", std::move(frames));
    entries.append(std::move(d));
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
