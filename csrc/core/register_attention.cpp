// Registers npu's scaled-dot-product-attention: the backend choice (the
// `_fused_sdp_choice` stub ATen's SDPA composite consults, and the op of the
// same name) and the memory-efficient attention kernels it leads to.
// Implementations: core/aten/attention_choice.h, core/aten/attention.h.
#include <ATen/native/transformers/attention.h>
#include <torch/library.h>

#include "core/aten/attention.h"
#include "core/aten/attention_choice.h"

namespace at::native {
REGISTER_PRIVATEUSE1_DISPATCH(_fused_sdp_choice_stub, &npudist::core::fused_sdp_choice)
}  // namespace at::native

namespace npudist::core {

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_fused_sdp_choice", &fused_sdp_choice);
  m.impl("_scaled_dot_product_efficient_attention", &scaled_dot_product_efficient_attention);
  m.impl("_scaled_dot_product_efficient_attention_backward", &scaled_dot_product_efficient_attention_backward);
}

}  // namespace npudist::core
