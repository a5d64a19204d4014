// Registers the npu backend with PyTorch (PrivateUse1): device guard, hooks,
// allocator, the CPU-allocator redirect, native kernels and the fallback.
// Implementations live in their own files; this file only wires them.
#include <ATen/detail/PrivateUse1HooksInterface.h>
#include <c10/core/Allocator.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <torch/library.h>

#include "core/allocator/cpu_redirect.h"
#include "core/allocator/caching_allocator.h"
#include "core/aten/convolution.h"
#include "core/aten/fallback.h"
#include "core/aten/half_gemm.h"
#include "core/aten/native_ops.h"
#include "core/aten/random_ops.h"
#include "core/guard.h"
#include "core/hooks.h"

#include <ATen/ops/_reshape_alias_native.h>
#include <ATen/ops/set_native.h>
#include <ATen/ops/as_strided_native.h>
#include <ATen/ops/unfold_native.h>
#include <ATen/ops/view_as_complex_native.h>
#include <ATen/ops/view_as_real_native.h>
#include <ATen/ops/view_native.h>

namespace npudist::core {
namespace {

C10_REGISTER_GUARD_IMPL(PrivateUse1, NpuGuardImpl);

struct Registrar {
  Registrar() {
    static NpuHooks hooks;
    at::RegisterPrivateUse1HooksInterface(&hooks);
    c10::SetAllocator(c10::DeviceType::PrivateUse1, &npuAllocator());
    installCpuRedirectAllocator();
  }
};
Registrar registrar;

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("empty.memory_format", &empty_memory_format);
  m.impl("empty_strided", &empty_strided);
  m.impl("_copy_from", &copy_from);
  m.impl("_copy_from_and_resize", &copy_from_and_resize);
  m.impl("_local_scalar_dense", &local_scalar_dense);
  m.impl("_efficientzerotensor", &efficient_zero_tensor);
  m.impl("convolution_overrideable", &convolution_overrideable);
  m.impl("convolution_backward_overrideable", &convolution_backward_overrideable);
  m.impl("native_dropout", &native_dropout);
  m.impl("record_stream", &record_stream);
  m.impl("resize_", &resize_);
  m.impl("set_", &set_empty_);
  m.impl("set_.source_Storage", &set_storage_);
  m.impl("set_.source_Storage_storage_offset", &set_storage_offset_);
  m.impl("set_.source_Tensor", &at::native::set_tensor_);  // re-dispatches to set_.source_Storage_storage_offset
  // Views: PyTorch's device-generic implementations, which only touch metadata.
  m.impl("as_strided", &at::native::as_strided_tensorimpl);
  m.impl("view", &at::native::view);
  m.impl("_reshape_alias", &at::native::_reshape_alias);
  m.impl("unfold", &at::native::unfold);
  m.impl("view_as_real", &at::native::view_as_real);
  m.impl("view_as_complex", &at::native::view_as_complex);
  // bf16/fp16 GEMMs with fp32 accumulation (half_gemm.h); other dtypes go on to the fallback.
  for (const char* name : halfGemmOps()) m.impl(name, torch::CppFunction::makeFromBoxedFunction<&npuHalfGemm>());
}

// _copy_from resolves conjugate/negative bits itself (copying between CPU
// views that carry them). Left to the Conjugate/Negative fallbacks, it would
// materialise its input with clone, which copies through _copy_from again:
// an endless recursion for every conj() npu tensor moved to cpu.
TORCH_LIBRARY_IMPL(aten, Conjugate, m) {
  m.impl("_copy_from", torch::CppFunction::makeFallthrough());
  m.impl("_copy_from_and_resize", torch::CppFunction::makeFallthrough());
}
TORCH_LIBRARY_IMPL(aten, Negative, m) {
  m.impl("_copy_from", torch::CppFunction::makeFallthrough());
  m.impl("_copy_from_and_resize", torch::CppFunction::makeFallthrough());
}

TORCH_LIBRARY_IMPL(_, PrivateUse1, m) { m.fallback(torch::CppFunction::makeFromBoxedFunction<&npuFallback>()); }

// Quantized npu tensors (quantize_per_tensor on npu, q.to("npu")) run QuantizedCPU kernels, as
// QuantizedCUDA runs CUDA ones; without this they would lose their quantizer.
TORCH_LIBRARY_IMPL(_, QuantizedPrivateUse1, m) {
  m.fallback(torch::CppFunction::makeFromBoxedFunction<&npuQuantizedFallback>());
}

// Ops with both a QuantizedCPU kernel and a CompositeExplicitAutograd(NonFunctional) one: the
// composite kernel would win over the fallback above for QuantizedPrivateUse1 (and cannot build a
// quantized result: clone's empty_strided raises), so they go to the QuantizedCPU kernel explicitly.
// The list is what torch 2.13 registers for both keys
// (torch._C._dispatch_get_registrations_for_dispatch_key).
TORCH_LIBRARY_IMPL(aten, QuantizedPrivateUse1, m) {
  for (const char* name : {"_upsample_nearest_exact2d",
                           "_upsample_nearest_exact3d",
                           "avg_pool2d",
                           "avg_pool3d",
                           "cat",
                           "clamp",
                           "clone",
                           "empty_like",
                           "eq.Scalar",
                           "eq.Tensor",
                           "ge.Scalar",
                           "ge.Tensor",
                           "gelu",
                           "gelu_",
                           "gt.Scalar",
                           "gt.Tensor",
                           "hardsigmoid",
                           "index.Tensor",
                           "le.Scalar",
                           "le.Tensor",
                           "leaky_relu",
                           "leaky_relu_",
                           "lt.Scalar",
                           "lt.Tensor",
                           "max.dim",
                           "mean.dim",
                           "min.dim",
                           "ne.Scalar",
                           "ne.Tensor",
                           "sigmoid",
                           "sort.stable",
                           "squeeze",
                           "squeeze.dim",
                           "squeeze.dims",
                           "tanh",
                           "threshold",
                           "topk",
                           "unsqueeze",
                           "upsample_bilinear2d",
                           "upsample_nearest2d",
                           "upsample_nearest3d"}) {
    m.impl(name, torch::CppFunction::makeFromBoxedFunction<&npuQuantizedFallback>());
  }
  // Copies between quantized npu and cpu tensors, or within npu: memcpy, as for any npu tensor.
  m.impl("_copy_from", &copy_from);
  m.impl("_copy_from_and_resize", &copy_from_and_resize);
}

}  // namespace npudist::core
