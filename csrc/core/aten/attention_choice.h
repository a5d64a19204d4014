// Which scaled-dot-product-attention kernel SDPA runs for npu tensors.
//
// ATen's SDPA composite asks `_fused_sdp_choice_stub` for a backend when the
// stub has a kernel for the device (PrivateUse1 registers one here). The rules
// are CUDA's (sdp_utils.cpp, an sm80 GPU), so the same inputs take a fused
// kernel on npu exactly when they would on CUDA: where CUDA would run flash or
// memory-efficient attention, npu runs its memory-efficient attention kernel
// (csrc/core/aten/attention.h); where CUDA would run the math path, so does
// npu. torch.nn.attention.sdpa_kernel and torch.backends.cuda.enable_*_sdp are
// honoured through at::globalContext(). docs/device_api.md has the table.
#pragma once

#include <ATen/core/Tensor.h>

#include <optional>

namespace npudist::core {

// An at::SDPBackend value as int64 (the `_fused_sdp_choice` op's return):
// efficient_attention or math. Raises "No available kernel" (as CUDA does)
// when every enabled backend rejects the inputs, with one warning per
// backend saying why.
int64_t fused_sdp_choice(const at::Tensor& query, const at::Tensor& key, const at::Tensor& value,
                         const std::optional<at::Tensor>& attn_mask, double dropout_p, bool is_causal,
                         std::optional<double> scale, bool enable_gqa);

}  // namespace npudist::core
