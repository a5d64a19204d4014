#include "profiler/collective_events.h"

#include <torch/csrc/distributed/c10d/ParamCommsUtils.hpp>

#include <algorithm>

#include "hccl/work.h"

namespace npudist::profiler {
namespace {

int64_t numel(const std::vector<at::Tensor>& ts) {
  int64_t n = 0;
  for (const auto& t : ts) n += t.defined() ? t.numel() : 0;
  return n;
}

at::ScalarType dtypeOf(const hccl::OpState& s) {
  for (const auto* l : {&s.inputList(), &s.outputs})
    for (const auto& t : *l)
      if (t.defined()) return t.scalar_type();
  return at::kByte;
}

// Split sizes as ProcessGroupNCCL reports them: one entry per tensor of a list
// collective (first dimension), empty for single-tensor ones.
std::vector<int64_t> splits(const std::vector<at::Tensor>& ts) {
  std::vector<int64_t> out;
  if (ts.size() <= 1) return out;
  for (const auto& t : ts) out.push_back(t.defined() && t.dim() ? t.size(0) : 0);
  return out;
}

}  // namespace

void ParamCommsRange::open(const CollectiveInfo& info, const hccl::OpState& state) {
  int start = 0, stride = 1;
  const auto& g = info.global_ranks;
  if (g.size() >= 1) start = int(g[0]);
  if (g.size() >= 2) stride = int(g[1] - g[0]);
  auto pg = std::make_tuple(info.pg_name, info.pg_desc);
  auto debug = std::make_shared<torch::ParamCommsDebugInfo>(
      pg, info.rank, std::string(info.op), numel(state.inputList()), numel(state.outputs), dtypeOf(state),
      splits(state.inputList()), splits(state.outputs), start, stride, info.world_size, /*isAsynchronizedOp=*/false);
  debug->setSequenceInfo(info.seq, info.is_p2p);
  guard_.emplace(c10::DebugInfoKind::PARAM_COMMS_INFO, debug);
  rf_ = std::make_unique<at::RecordFunction>(at::RecordScope::FUNCTION);
  if (!rf_->isActive()) {
    rf_.reset();
    return;
  }
  if (rf_->needsInputs()) {
    std::vector<c10::IValue> inputs{c10::IValue(info.seq),
                                    c10::IValue(pg),
                                    c10::IValue(info.rank),
                                    c10::IValue(info.op),
                                    c10::IValue(splits(state.inputList())),
                                    c10::IValue(splits(state.outputs)),
                                    c10::IValue(start),
                                    c10::IValue(stride),
                                    c10::IValue(info.world_size),
                                    c10::IValue(false)};
    rf_->before(at::kParamCommsCallName, c10::ArrayRef<const c10::IValue>(inputs.data(), inputs.size()));
  } else {
    rf_->before(at::kParamCommsCallName);
  }
  if (active()) {
    title_rf_ = std::make_unique<at::RecordFunction>(at::RecordScope::USER_SCOPE);
    if (title_rf_->isActive()) {
      title_rf_->before(state.name);
    } else {
      title_rf_.reset();
    }
  }
}

void ParamCommsRange::markLaunch(uint64_t correlation) {
  launch_correlation_ = correlation;
  launch_start_ns_ = nowNs();
}

ParamCommsRange::~ParamCommsRange() {
  if (!launch_correlation_ || !active()) return;
  DeviceEvent e;
  e.kind = EventKind::kLaunch;
  e.name = "hcclLaunch";
  e.start_ns = launch_start_ns_;
  e.end_ns = nowNs();
  e.correlation = launch_correlation_;
  e.host_tid = hostThreadId();
  record(std::move(e));
}

const char* workTitle(const std::string& name) { return at::hasCallbacks() && !active() ? name.c_str() : nullptr; }

void describeCollective(DeviceScope& scope, const hccl::OpState& state, const std::string& pg_name) {
  DeviceEvent& e = scope.event();
  e.name = state.name + " (npu kernel)";
  e.correlation = state.profiler_correlation;
  e.user_ranges.clear();
  if (state.profiler_user_correlation) e.user_ranges.push_back(state.profiler_user_correlation);
  scope.arg("Collective name", state.name, true);
  scope.arg("In msg nelems", std::to_string(numel(state.inputList())));
  scope.arg("Out msg nelems", std::to_string(numel(state.outputs)));
  scope.arg("dtype", c10::toString(dtypeOf(state)), true);
  scope.arg("bytes", std::to_string(state.bytes));
  scope.arg("Process Group Name", pg_name, true);
  scope.arg("Seq", std::to_string(state.is_p2p ? state.p2p_seq : state.collective_seq));
  if (state.profiler_issue_stream >= 0) {  // a step trace's fields (docs/plan.md)
    std::string ranks = "[";
    for (size_t i = 0; i < state.profiler_ranks.size(); ++i)
      ranks += (i ? "," : "") + std::to_string(state.profiler_ranks[i]);
    scope.arg("Group ranks", ranks + "]");
    scope.arg("Peer", std::to_string(state.profiler_peer));
    scope.arg("Issue stream", std::to_string(state.profiler_issue_stream));
    // The collective was issued this long before it started (its place in the issue order).
    scope.arg("Issue delay ns", std::to_string(std::max<int64_t>(0, scope.event().start_ns - state.profiler_issue_ns)));
    scope.arg("Out bytes", std::to_string(int64_t(numel(state.outputs)) * int64_t(c10::elementSize(dtypeOf(state)))));
    scope.arg("In bytes",
              std::to_string(int64_t(numel(state.inputList())) * int64_t(c10::elementSize(dtypeOf(state)))));
  }
}

void recordCollectiveWait(const hccl::OpState& state, int device, int64_t stream, bool blocking, int64_t waited_ns) {
  if (!stepTrace() || state.profiler_issue_stream < 0) return;
  recordSync(device, stream, "npu stream wait collective",
             {{"Process Group Name", {state.profiler_pg, true}},
              {"Seq", {std::to_string(state.is_p2p ? state.p2p_seq : state.collective_seq), false}},
              {"is_p2p", {state.is_p2p ? "true" : "false", false}},
              {"blocking", {blocking ? "true" : "false", false}},
              {"Wait ns", {std::to_string(waited_ns), false}}});
}

}  // namespace npudist::profiler
