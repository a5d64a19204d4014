#include "core/aten/attention_choice.h"

#include <ATen/Context.h>
#include <ATen/native/transformers/sdp_utils_cpp.h>

#include <array>

namespace npudist::core {
namespace {

using Check = bool (*)(const sdp::sdp_params&, bool);

bool allPass(const sdp::sdp_params& p, std::initializer_list<Check> checks, bool debug) {
  for (Check c : checks)
    if (!c(p, debug)) return false;
  return true;
}

// CUDA's minimum_gemm_alignment on sm80: 4 elements for fp32, 8 for fp16/bf16.
bool headDimMemEfficient(const sdp::sdp_params& p, bool debug) {
  const bool half = p.query.scalar_type() == at::kHalf || p.query.scalar_type() == at::kBFloat16;
  const int64_t align = half ? 8 : 4;
  const auto dq = p.query.sym_size(-1), dv = p.value.sym_size(-1);
  if (dq == p.key.sym_size(-1) && dq % align == 0 && dq > 0 && dv % align == 0 && dv > 0) return true;
  if (debug)
    TORCH_WARN("Mem efficient attention requires last dimension of inputs to be divisible by ", align,
               ". Got Query.size(-1): ", dq, ", Key.size(-1): ", p.key.sym_size(-1), ", Value.size(-1): ", dv,
               " instead.");
  return false;
}

// CUDA's check_head_dim_size_flash: equal head dims, at most 256.
bool headDimFlash(const sdp::sdp_params& p, bool debug) {
  const auto dq = p.query.sym_size(-1);
  if (dq == p.key.sym_size(-1) && dq == p.value.sym_size(-1) && dq <= 256) return true;
  if (debug)
    TORCH_WARN("Flash attention requires q, k, v to have the same last dimension and to be less than or equal to 256.",
               " Got Query.size(-1): ", dq, ", Key.size(-1): ", p.key.sym_size(-1),
               ", Value.size(-1): ", p.value.sym_size(-1), " instead.");
  return false;
}

// FlashAttention-2 aligns causal masks to the bottom right; CUDA refuses
// non-square causal inputs rather than change SDPA's top-left meaning.
bool flashCausalSquare(const sdp::sdp_params& p, bool debug) {
  if (!p.is_causal || p.query.is_nested() || p.key.is_nested() || p.query.sym_size(-2) == p.key.sym_size(-2))
    return true;
  if (debug) TORCH_WARN("Flash attention does not support the is_causal flag when seqlen_q != seqlen_k.");
  return false;
}

bool lowPrecision(const sdp::sdp_params& p, bool debug) {
  return sdp::check_tensor_dtype(p, std::array<at::ScalarType, 2>{at::kHalf, at::kBFloat16}, debug);
}

bool memEfficientDtype(const sdp::sdp_params& p, bool debug) {
  return sdp::check_tensor_dtype(p, std::array<at::ScalarType, 3>{at::kFloat, at::kHalf, at::kBFloat16}, debug);
}

// npu runs no fused kernel on nested tensors (CUDA does, for inference).
bool dense(const sdp::sdp_params& p, bool debug) {
  if (sdp::has_only_dense_inputs(p)) return true;
  if (debug) TORCH_WARN("Fused attention kernels on npu do not support nested tensors; the math path runs them.");
  return false;
}

// Would CUDA (sm80) run flash attention on these inputs?
bool cudaWouldUseFlash(const sdp::sdp_params& p, bool debug) {
  return allPass(p,
                 {sdp::check_runtime_disabled_flash, dense, sdp::check_tensor_shapes, sdp::check_for_attn_mask,
                  headDimFlash, flashCausalSquare, lowPrecision, sdp::check_nonzero_sequence_lengths_dense,
                  sdp::check_last_dim_stride_equals_1_dense<true>,
                  sdp::check_batch_size_and_num_heads_dense<true /*supports_gqa*/>},
                 debug);
}

// Would CUDA (sm80) run memory-efficient attention on these inputs?
bool cudaWouldUseMemEfficient(const sdp::sdp_params& p, bool debug) {
  return allPass(
      p,
      {sdp::check_runtime_disabled_mem_efficient, dense, sdp::check_tensor_shapes, headDimMemEfficient,
       memEfficientDtype, sdp::check_nonzero_sequence_lengths_dense, sdp::check_last_dim_stride_equals_1_dense<false>,
       sdp::check_batch_size_and_num_heads_dense<false /*supports_gqa*/>},
      debug);
}

at::SDPBackend select(const sdp::sdp_params& p, bool debug) {
  for (at::SDPBackend b : at::globalContext().sDPPriorityOrder()) {
    switch (b) {
      case at::SDPBackend::flash_attention:
        // ATen sends a flash choice off CUDA to _scaled_dot_product_flash_attention_for_cpu, which has
        // no DTensor strategy and no dropout: npu's efficient kernel serves flash's cases instead.
        if (cudaWouldUseFlash(p, debug)) return at::SDPBackend::efficient_attention;
        break;
      case at::SDPBackend::efficient_attention:
        if (cudaWouldUseMemEfficient(p, debug)) return at::SDPBackend::efficient_attention;
        break;
      case at::SDPBackend::math:
        if (at::globalContext().userEnabledMathSDP()) return at::SDPBackend::math;
        if (debug) TORCH_WARN("Math attention has been runtime disabled.");
        break;
      case at::SDPBackend::cudnn_attention:
        if (debug && at::globalContext().userEnabledCuDNNSDP())
          TORCH_WARN("cuDNN attention is not available on npu (as on a GPU without it).");
        break;
      default:
        break;
    }
  }
  return at::SDPBackend::error;
}

}  // namespace

int64_t fused_sdp_choice(const at::Tensor& query, const at::Tensor& key, const at::Tensor& value,
                         const std::optional<at::Tensor>& attn_mask, double dropout_p, bool is_causal,
                         std::optional<double> scale, bool enable_gqa) {
  sdp::sdp_params p{query, key, value, attn_mask, dropout_p, is_causal, enable_gqa};
  at::SDPBackend backend = select(p, /*debug=*/false);
  if (backend == at::SDPBackend::error) {
    select(p, /*debug=*/true);  // one warning per rejecting backend, as CUDA prints
    TORCH_CHECK(false,
                "No available kernel. Aborting execution. (scaled_dot_product_attention on npu: every backend "
                "enabled by torch.nn.attention.sdpa_kernel rejected these inputs; the warnings above say why. "
                "Enable SDPBackend.MATH, which accepts any inputs.)");
  }
  return static_cast<int64_t>(backend);
}

}  // namespace npudist::core
