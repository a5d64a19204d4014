#include "profiler/kernel_scope.h"

namespace npudist::profiler {

void KernelScope::describe(const std::string& op_name, const c10::IValue* args, size_t n, int64_t wait_from) {
  scope_.event().name = kernelName(op_name);
  shapes_ = stepTrace();
  if (!shapes_) return;
  // A step trace separates the host's own time from waiting for the stream (docs/plan.md).
  if (wait_from) scope_.arg("Wait ns", std::to_string(scope_.event().start_ns - wait_from));
  if (args) describeKernelInputs(scope_, args, n);
}

}  // namespace npudist::profiler
