// Blocked (flash-style) memory-efficient attention on CPU tensors: the
// algorithm behind npu's _scaled_dot_product_efficient_attention(_backward)
// (csrc/core/aten/attention.h runs it on npu memory without copying).
//
// Forward: for each (batch, query head, query block), an online softmax over
// key blocks (running row max and row sum, rescaled accumulator), so no
// L x S matrix exists beyond one block. Backward recomputes each block's
// probabilities from the saved log-sum-exp, FlashAttention-2 style. Blocks
// are widened to fp32 and the GEMMs are ATen's CPU at::mm/at::addmm on them;
// half-precision outputs are rounded once, at the end. On AVX-512 CPUs the
// softmax steps are fused row passes (bf16_simd.h); bf16 on AVX512-BF16 CPUs
// goes to the native kernels of attention_bf16.h instead (run-time choice).
//
// Dropout keeps element (b, h, i, j) iff u(seed, offset + ((b*H + h)*L + i)*S + j)
// >= p, where u is a counter-based hash to [0, 1): backward regenerates the
// forward's mask from (seed, offset) alone, as CUDA's Philox-based kernel
// does; the bits differ from CUDA's.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <limits>
#include <optional>

namespace npudist::core {

// Rows of queries and keys per block of the blocked kernels (fp32 here, bf16 in attention_bf16.h).
// Short sequences: 64 x 256 (a 64 KiB fp32 score block; causal diagonal blocks waste little). From
// 1024 on: 256 x 512, as PyTorch's CPU flash kernel splits (sdp_utils' qSplitSize/kvSplitSize): the
// GEMMs are ~8x larger and run closer to the BLAS peak, and the diagonal's share of the work is small.
struct AttentionBlocks {
  int64_t q, k;
};
inline AttentionBlocks attentionBlocks(int64_t L, int64_t S) { return {L >= 1024 ? 256 : 64, S >= 1024 ? 512 : 256}; }
inline constexpr float kInf = std::numeric_limits<float>::infinity();

struct AttentionDropout {
  double p = 0.0;
  uint64_t seed = 0;
  uint64_t offset = 0;
};

// Shapes: query (B, Hq, L, D), key (B, Hkv, S, D), value (B, Hkv, S, Dv) with
// Hq a multiple of Hkv (grouped-query attention); bias broadcastable to
// (B, Hq, L, S) as a 4-D tensor (any strides). All CPU, float/half/bfloat16,
// bias in the query's dtype. out (B, Hq, L, Dv) in the query's dtype; lse
// (B, Hq, >= L) float, or undefined to skip it. Causal masks are top-left
// (key j visible to query i iff j <= i), as the math path's tril.
// Fully masked rows give 0 and lse = +inf.
void efficientAttentionForwardCpu(const at::Tensor& query, const at::Tensor& key, const at::Tensor& value,
                                  const std::optional<at::Tensor>& bias, double scale, bool is_causal,
                                  const AttentionDropout& dropout, const at::Tensor& out, const at::Tensor& lse);

// Gradients for the forward above, from its out and lse. grad_bias, when
// defined, is (B, Hq, L, S) and receives d(loss)/d(bias) per element
// (broadcast dimensions are reduced by autograd).
void efficientAttentionBackwardCpu(const at::Tensor& grad_out, const at::Tensor& query, const at::Tensor& key,
                                   const at::Tensor& value, const std::optional<at::Tensor>& bias,
                                   const at::Tensor& out, const at::Tensor& lse, double scale, bool is_causal,
                                   const AttentionDropout& dropout, const at::Tensor& grad_query,
                                   const at::Tensor& grad_key, const at::Tensor& grad_value,
                                   const at::Tensor& grad_bias);

}  // namespace npudist::core
