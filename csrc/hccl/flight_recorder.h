// The flight recorder: a ring of the last TORCH_HCCL_TRACE_BUFFER_SIZE
// collectives of this process (all hccl groups), written on demand as a
// pickle with PyTorch's flight-recorder schema (version "2.10"), so that
// PyTorch's analyzer, torchfrtrace, reads our dumps. PyTorch's own recorder
// cannot be used from an extension (hidden symbols, nlohmann/json not shipped).
//
// Recording is on every collective's path, so an entry is two cache lines of
// plain fields (no strings, vectors or heap blocks): op kind and dtypes as
// enum values, up to four tensors' shapes inline, group name and description
// looked up in a table kept per group; names and strings are made only when
// the ring is dumped. Larger shapes and Python frames go to a side store
// touched only by the collectives that need it.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "hccl/spin_lock.h"

namespace npudist::hccl {

// A Python frame: function name, file, line.
struct Frame {
  std::string name, filename;
  int line = 0;
};

// What a collective's caller records (FlightRecorder::record).
struct FrRecord {
  uint64_t pg_id = 0;
  uint64_t collective_seq = 0, p2p_seq = 0, op_id = 0;
  int kind = -1;  // group_stats.h's op kind (>= 0)
  int peer = -1;  // send/recv: the other group rank (-1: a recv from any source)
  bool is_p2p = false;
  bool desc_known = false;  // the group's description was set (else the trace says "undefined")
  bool started = false;     // it runs at once: recorded as started at its creation time
  int64_t created_ns = 0;   // wall clock
  int64_t timeout_ms = 0;
};

// One slot of the ring (two cache lines). The first line is what started()
// and completed() update.
struct alignas(64) FrEntry {
  static constexpr int kInlineTensors = 4, kInlineDims = 4;
  enum State : uint8_t { kScheduled, kStarted, kCompleted };
  enum Flags : uint8_t { kP2P = 1, kDescKnown = 2, kSpilledShapes = 4, kHasFrames = 8 };
  // line 0
  int64_t id = -1;  // record_id; -1: free slot
  uint64_t collective_seq_id = 0, p2p_seq_id = 0, op_id = 0;
  int64_t time_created_ns = 0, time_started_ns = 0, time_completed_ns = 0;  // wall clock; 0: not yet
  uint32_t pg_id = 0;
  uint8_t state = kScheduled;
  int8_t kind = -1;
  uint8_t flags = 0;
  uint8_t n_in = 0;  // tensors described inline: n_in inputs, then n_out outputs
  // line 1
  int64_t timeout_ms = 0;
  uint64_t thread_id = 0;
  int32_t peer = -1;
  uint8_t n_out = 0;
  uint8_t ndim[kInlineTensors] = {};
  uint8_t dtype[kInlineTensors] = {};  // c10::ScalarType
  int64_t dims[kInlineDims] = {};
};
static_assert(sizeof(FrEntry) == 128, "a flight-recorder entry is two cache lines");

// What does not fit in an entry: shapes of more than four tensors or
// dimensions, Python frames.
struct FrSide {
  std::vector<std::vector<int64_t>> input_sizes, output_sizes;
  std::vector<uint8_t> input_dtypes, output_dtypes;
  std::vector<Frame> frames;
};

class FlightRecorder {
 public:
  static FlightRecorder& get();

  bool enabled() const { return capacity_ > 0; }
  size_t capacity() const { return capacity_; }
  // Records a collective over `inputs` and `outputs` (undefined tensors are
  // left out) and the caller's Python `frames` (null: none); returns its
  // record id, or -1 if disabled.
  int64_t record(const FrRecord& r, const std::vector<at::Tensor>& inputs, const std::vector<at::Tensor>& outputs,
                 std::vector<Frame>* frames);
  // Times are CLOCK_MONOTONIC ns (what the collective measured anyway); the
  // entry keeps wall-clock ns (monoToWallNs), as PyTorch's does.
  void started(int64_t id, int64_t start_mono_ns);
  void completed(int64_t id, int64_t start_mono_ns, int64_t end_mono_ns);
  size_t size();

  // The names the entries of group `pg_id` are dumped with (GroupStats).
  void describeGroup(uint64_t pg_id, const std::string& name, int group_rank);
  void setGroupDesc(uint64_t pg_id, const std::string& desc);

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
  struct GroupNames {
    std::string name, desc = "undefined";
    int rank = 0;
  };
  GroupNames groupNames(uint64_t pg_id);
  // record() of an entry with shapes or frames for the side store (kept out
  // of the common path's code).
  int64_t recordWithSide(FrEntry& e, const std::vector<at::Tensor>& inputs, const std::vector<at::Tensor>& outputs,
                         bool spilled, std::vector<Frame>* frames);

  SpinLock lock_;  // the ring, side_ and next_id_
  size_t capacity_ = 0;
  std::unique_ptr<FrEntry[]> ring_;
  std::vector<std::unique_ptr<FrSide>> side_;  // per slot, made on first use
  int64_t next_id_ = 0;
  std::mutex groups_mutex_;
  std::map<uint64_t, GroupNames> groups_;  // every group ever described (dumps name those that ended too)
};

// Wall-clock nanoseconds (the unit of PyTorch's flight-recorder times).
int64_t wallNs();
// A CLOCK_MONOTONIC time as wall-clock ns: the offset between the clocks is
// taken once per process (when the library loads), so recording costs no
// clock read (a slow vDSO call on VMs); a later change of the wall clock is
// not followed.
extern const int64_t kMonoToWallOffsetNs;
inline int64_t monoToWallNs(int64_t mono_ns) { return mono_ns + kMonoToWallOffsetNs; }

}  // namespace npudist::hccl
