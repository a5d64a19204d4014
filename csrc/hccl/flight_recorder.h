// The flight recorder: a ring of the last TORCH_HCCL_TRACE_BUFFER_SIZE
// collectives of this process (all hccl groups), written on demand as a
// pickle with PyTorch's flight-recorder schema (version "2.10"), so that
// PyTorch's analyzer, torchfrtrace, reads our dumps. PyTorch's own recorder
// cannot be used from an extension (hidden symbols, nlohmann/json not shipped).
#pragma once

#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#include "hccl/pickle.h"

namespace npudist::hccl {

// A Python frame: function name, file, line.
struct Frame {
  std::string name, filename;
  int line = 0;
};

struct FrEntry {
  int64_t id = -1;  // record_id; -1: free slot
  uint64_t pg_id = 0;
  std::string pg_name, pg_desc;
  uint64_t collective_seq_id = 0, p2p_seq_id = 0, op_id = 0;
  std::string profiling_name;  // "hccl:all_reduce", "hccl:send 0->1"
  int profiling_kind = -1;     // the op kind profiling_name was made from (-1: none, or a send/recv's)
  int64_t time_created_ns = 0;  // wall clock, as PyTorch's
  std::vector<std::vector<int64_t>> input_sizes, output_sizes;
  std::vector<const char*> input_dtypes, output_dtypes;  // c10::toString(ScalarType): static strings
  enum State { kScheduled, kStarted, kCompleted } state = kScheduled;
  int64_t time_started_ns = 0, time_completed_ns = 0;
  double duration_ms = -1;
  bool retired = false;
  int64_t timeout_ms = 0;
  bool is_p2p = false;
  std::vector<Frame> frames;
  uint64_t thread_id = 0;
};

class FlightRecorder {
 public:
  static FlightRecorder& get();

  bool enabled() const { return capacity_ > 0; }
  size_t capacity() const { return capacity_; }
  // Fills a slot through `fill` (under the lock; the entry is reused, so
  // vectors keep their capacity) and returns its record id, or -1 if disabled.
  template <typename Fill>
  int64_t record(const Fill& fill) {
    if (!capacity_) return -1;
    std::lock_guard<std::mutex> g(mutex_);
    const int64_t id = next_id_++;
    FrEntry& e = ring_[size_t(id) % capacity_];
    e.id = id;
    e.state = FrEntry::kScheduled;
    e.time_started_ns = e.time_completed_ns = 0;
    e.duration_ms = -1;
    e.retired = false;
    e.frames.clear();
    fill(e);
    return id;
  }
  // Times are CLOCK_MONOTONIC ns (what the collective measured anyway); the
  // entry keeps wall-clock ns (monoToWallNs), as PyTorch's does.
  void started(int64_t id, int64_t start_mono_ns);
  void completed(int64_t id, int64_t start_mono_ns, int64_t end_mono_ns);
  size_t size();

  // The whole dump as a pickle: version, pg_config, pg_status, entries.
  std::string pickle();
  // Writes the dump to `path` (atomically: a temporary file, then rename).
  // Returns "" on success, else why not.
  std::string writeTo(const std::string& path);
  // TORCH_HCCL_DEBUG_INFO_TEMP_FILE (default /tmp/hccl_trace_rank_) + rank.
  static std::string defaultPath(int global_rank);

  // Python frames of the caller (installed by the bindings; used only when
  // NPUDIST_HCCL_TRACE_FRAMES=1).
  using FrameCapture = std::vector<Frame> (*)();
  static void setFrameCapture(FrameCapture f);
  static bool captureFramesEnabled();
  static std::vector<Frame> captureFrames();

 private:
  FlightRecorder();
  FrEntry* find(int64_t id);  // the slot still holding `id`, or null (lock held)
  std::mutex mutex_;
  size_t capacity_ = 0;
  std::vector<FrEntry> ring_;
  int64_t next_id_ = 0;
};

// Wall-clock nanoseconds (the unit of PyTorch's flight-recorder times).
int64_t wallNs();
// A CLOCK_MONOTONIC time as wall-clock ns: the offset between the clocks is
// taken once per process, so recording costs no clock read (a slow vDSO call
// on VMs); a later change of the wall clock is not followed.
int64_t monoToWallNs(int64_t mono_ns);

}  // namespace npudist::hccl
