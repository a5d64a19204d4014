// Native bf16 memory-efficient attention for CPUs with AVX512-BF16: the
// same blocked algorithm as attention_kernels.h, with every GEMM a bf16 x bf16
// -> fp32 product (bf16simd::gemm, vdpbf16ps) instead of widened blocks and
// an fp32 GEMM, and the softmax steps fused in one vectorised pass per block
// row. Scores, probabilities' normaliser, the output accumulator and the
// gradient accumulators are fp32; the probabilities (and dS in backward) are
// rounded to bf16 once before the GEMMs that consume them, as PyTorch's CPU
// flash kernel does for bf16. Each kernel returns false, doing nothing, where
// it does not apply (no AVX512-BF16, dtype other than bf16, dropout, a bias
// gradient, odd head dims); the caller then runs the widening kernel.
#pragma once

#include <ATen/core/Tensor.h>

#include <optional>

#include "core/aten/attention_kernels.h"

namespace npudist::core {

bool bf16AttentionForward(const at::Tensor& query, const at::Tensor& key, const at::Tensor& value,
                          const std::optional<at::Tensor>& bias, double scale, bool is_causal,
                          const AttentionDropout& dropout, const at::Tensor& out, const at::Tensor& lse);

bool bf16AttentionBackward(const at::Tensor& grad_out, const at::Tensor& query, const at::Tensor& key,
                           const at::Tensor& value, const std::optional<at::Tensor>& bias, const at::Tensor& out,
                           const at::Tensor& lse, double scale, bool is_causal, const AttentionDropout& dropout,
                           const at::Tensor& grad_query, const at::Tensor& grad_key, const at::Tensor& grad_value,
                           const at::Tensor& grad_bias);

// Whether the native bf16 kernels run on this CPU (AVX512-BF16 present and not switched off).
bool bf16AttentionNative();
// Switches the native bf16 kernels off (false) or back on; returns the previous value. For tests
// and benchmarks that compare the two paths.
bool setBf16AttentionNative(bool on);

}  // namespace npudist::core
