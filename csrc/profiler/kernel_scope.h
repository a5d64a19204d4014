// The device event of one npu kernel, described for torch.profiler and the
// planner's step trace the same way wherever the kernel runs: the boxed
// fallback (core/aten/fallback.cpp), the half-precision GEMMs
// (core/aten/half_gemm.cpp) and the attention kernels (core/aten/attention.cpp).
//
// Usage: take waitStart() before waiting for the stream, open a KernelScope
// around the kernel with the op's arguments in schema order, call outputs()
// with its results. With a step trace on, the event carries the time spent
// waiting ("Wait ns"), the arguments as record_shapes names them, bytes read
// and written; the step trace's reader computes FLOPs from those
// (torch.utils.flop_counter), so every op it knows gets its FLOPs.
#pragma once

#include <ATen/core/ivalue.h>

#include <cstdint>
#include <string>

#include "profiler/device_hooks.h"
#include "profiler/recorder.h"

namespace npudist::profiler {

// nowNs() when a step trace records, else 0: the start of a kernel's wait for its stream.
inline int64_t waitStart() { return __builtin_expect(stepTrace(), 0) ? nowNs() : 0; }

class KernelScope {
 public:
  // op_name: the schema name ("aten::mm"); args: the op's n arguments in schema order (read only
  // when a step trace records); wait_from: waitStart() taken before the stream wait, or 0.
  KernelScope(const std::string& op_name, int device, const c10::IValue* args, size_t n, int64_t wait_from)
      : scope_(EventKind::kKernel, device) {
    if (__builtin_expect(scope_.on(), 0)) describe(op_name, args, n, wait_from);
  }
  // Whether the kernel's arguments and results are wanted (a step trace records): callers that
  // box arguments only for the description check this first.
  bool shapes() const { return shapes_; }
  void outputs(const c10::IValue* rets, size_t n) {
    if (__builtin_expect(shapes_, 0)) describeKernelOutputs(scope_, rets, n);
  }

 private:
  void describe(const std::string& op_name, const c10::IValue* args, size_t n, int64_t wait_from);
  DeviceScope scope_;
  bool shapes_ = false;
};

// Whether a kernel opened now would be described with its arguments (so a caller boxes them).
inline bool kernelShapesWanted() { return __builtin_expect(stepTrace(), 0); }

}  // namespace npudist::profiler
