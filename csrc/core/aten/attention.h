// npu kernels for ATen's memory-efficient attention ops, the ones SDPA runs
// when _fused_sdp_choice picks efficient_attention (attention_choice.h), and
// the ones DTensor's SDPA strategy and context_parallel's ring attention know.
// The algorithm is attention_kernels.h, run zero-copy on npu memory.
//
// Contract (as CUDA's, torch/_meta_registrations.py): output (B, H, L, Ev)
// laid out as (B, L, H, Ev); logsumexp (B, H, ceil(L/32)*32) float when
// compute_log_sumexp, else (B, H, 0); philox_seed/philox_offset are 0-dim
// int64 cpu tensors holding the npu generator's (seed, offset) the dropout
// mask was drawn at (0 without dropout). Backward regenerates the mask from
// them. Grouped-query inputs (key/value heads dividing query heads) are
// accepted. Capturable in npu graphs without dropout (the kernel is recorded
// and runs at each replay); with dropout a capture raises.
#pragma once

#include <ATen/core/Tensor.h>

#include <array>
#include <optional>
#include <tuple>

namespace npudist::core {

std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor> scaled_dot_product_efficient_attention(
    const at::Tensor& query, const at::Tensor& key, const at::Tensor& value, const std::optional<at::Tensor>& attn_bias,
    bool compute_log_sumexp, double dropout_p, bool is_causal, std::optional<double> scale);

std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor> scaled_dot_product_efficient_attention_backward(
    const at::Tensor& grad_out, const at::Tensor& query, const at::Tensor& key, const at::Tensor& value,
    const at::Tensor& attn_bias, const at::Tensor& out, const at::Tensor& logsumexp, const at::Tensor& philox_seed,
    const at::Tensor& philox_offset, double dropout_p, std::array<bool, 4> grad_input_mask, bool is_causal,
    std::optional<double> scale);

}  // namespace npudist::core
