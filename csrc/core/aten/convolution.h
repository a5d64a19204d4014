// Convolution on npu. ATen's convolution sends every backend other than
// CPU/CUDA/MKLDNN to convolution_overrideable; these run PyTorch's CPU
// convolution on the npu memory (zero-copy, outputs in npu memory).
#pragma once

#include <ATen/core/Tensor.h>

#include <optional>
#include <tuple>

namespace npudist::core {

at::Tensor convolution_overrideable(const at::Tensor& input, const at::Tensor& weight,
                                    const std::optional<at::Tensor>& bias, at::IntArrayRef stride,
                                    at::IntArrayRef padding, at::IntArrayRef dilation, bool transposed,
                                    at::IntArrayRef output_padding, int64_t groups);

std::tuple<at::Tensor, at::Tensor, at::Tensor> convolution_backward_overrideable(
    const at::Tensor& grad_output, const at::Tensor& input, const at::Tensor& weight, at::IntArrayRef stride,
    at::IntArrayRef padding, at::IntArrayRef dilation, bool transposed, at::IntArrayRef output_padding, int64_t groups,
    std::array<bool, 3> output_mask);

}  // namespace npudist::core
