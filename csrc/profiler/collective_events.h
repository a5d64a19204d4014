// What hccl reports to torch.profiler (docs/profiling.md), kept here so the
// hooks in csrc/hccl stay a few lines:
//  - ParamCommsRange: PyTorch's "record_param_comms" CPU range with its
//    ParamCommsDebugInfo (sizes, dtype, group name and description, ranks,
//    sequence number), as ProcessGroupNCCL opens through RECORD_PARAM_COMMS_DATA,
//    and inside it the "hccl:all_reduce" range. While npu activity is recorded
//    that range is scoped to the issue on the calling thread (c10d::Work's own
//    range would stay open, on the issuing thread's stack of ranges, until the
//    Work object dies, and swallow the device work issued after it); the
//    collective's span on the device is its device event;
//  - describeCollective: the device event of a collective on its communicator's
//    stream ("hccl:all_reduce (npu kernel)") with the same fields.
#pragma once

#include <ATen/record_function.h>
#include <c10/util/ThreadLocalDebugInfo.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "profiler/recorder.h"

namespace npudist::hccl {
struct OpState;
class GroupStats;
}  // namespace npudist::hccl

namespace npudist::profiler {

struct CollectiveInfo {
  const char* op;  // "all_reduce", "_allgather_base", "send" ...
  std::string pg_name, pg_desc;
  int rank = 0, world_size = 0;
  std::vector<int64_t> global_ranks;  // group rank -> global rank
  int64_t seq = 0;
  bool is_p2p = false;
};

// Opens "record_param_comms" for the collective `state` describes, if some
// RecordFunction callback (torch.profiler, execution trace) is active; closes
// it when destroyed. Cheap to construct empty: call open() only under
// at::hasCallbacks().
class ParamCommsRange {
 public:
  ParamCommsRange() = default;
  void open(const CollectiveInfo& info, const hccl::OpState& state);
  // From now until destruction this thread issues the collective of
  // `correlation`: recorded as its host-side launch (an "hcclLaunch" runtime
  // event, which trace tools use to tie device work to the CPU op).
  void markLaunch(uint64_t correlation);
  ~ParamCommsRange();
  ParamCommsRange(const ParamCommsRange&) = delete;
  ParamCommsRange& operator=(const ParamCommsRange&) = delete;

 private:
  std::optional<c10::DebugInfoGuard> guard_;      // destroyed last
  std::unique_ptr<at::RecordFunction> rf_;        // record_param_comms
  std::unique_ptr<at::RecordFunction> title_rf_;  // hccl:<op>, destroyed first
  uint64_t launch_correlation_ = 0;
  int64_t launch_start_ns_ = 0;
};

// The title c10d::Work should open its range with: none while npu activity is
// recorded (ParamCommsRange opens a scoped one), else `name` when anyone records.
const char* workTitle(const std::string& name);

// Names the device event of a collective and adds its fields.
void describeCollective(DeviceScope& scope, const hccl::OpState& state, const std::string& pg_name);

// For a step trace: `stream` of `device` was made to wait for the collective
// (Work.wait(); blocking: the calling thread waited for it too, for `waited_ns`).
void recordCollectiveWait(const hccl::OpState& state, int device, int64_t stream, bool blocking, int64_t waited_ns = 0);

}  // namespace npudist::profiler
