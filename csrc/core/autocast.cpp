// torch.autocast("npu"): PyTorch's autocast policy lists (the AT_FORALL_*
// macros that ATen exports so backends can reuse them) registered for the
// AutocastPrivateUse1 key: matmul/linear/conv in the lower precision, norms,
// softmax and losses in float32, and widest-type promotion for mixed ops.
#include <ATen/autocast_mode.h>
#include <torch/library.h>

namespace npudist::core {
namespace {

using at::Tensor;
using at::autocast::CastPolicy;
using c10::IntArrayRef;
using c10::Scalar;
using c10::ScalarType;
using c10::SymInt;
using c10::SymIntArrayRef;
using std::optional;

#define NPU_LOWER_PRECISION(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, lower_precision_fp)
#define NPU_FP32(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, fp32)
#define NPU_FP32_SET_OPT_DTYPE(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, fp32_set_opt_dtype)
#define NPU_PROMOTE(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, promote)

// Ops without a policy run unchanged.
TORCH_LIBRARY_IMPL(_, AutocastPrivateUse1, m) { m.fallback(torch::CppFunction::makeFallthrough()); }

TORCH_LIBRARY_IMPL(aten, AutocastPrivateUse1, m) {
  AT_FORALL_LOWER_PRECISION_FP(NPU_LOWER_PRECISION)
  AT_FORALL_FP32(NPU_FP32)
  AT_FORALL_FP32_SET_OPT_DTYPE(NPU_FP32_SET_OPT_DTYPE)
  AT_FORALL_DIFFERENT_REDISPATCH_SIGNATURE(KERNEL_DIFFERENT_REDISPATCH_SIGNATURE_PRIVATEUSEONE)
  AT_FORALL_PROMOTE(NPU_PROMOTE)
}

}  // namespace
}  // namespace npudist::core
