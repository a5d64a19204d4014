// bf16 / fp16 convolution on npu with fp32 accumulation: operands widened to
// fp32, PyTorch's CPU fp32 convolution, results rounded once to the input
// dtype, so each result equals `conv(x.float(), w.float(), b.float()).to(dtype)`.
// Partial: the fp32 copies are of whole operands (held only during the call);
// blocking over the batch, as half_gemm does over rows, is not implemented.
#pragma once

#include <ATen/core/Tensor.h>

#include <array>
#include <optional>
#include <tuple>

namespace npudist::core {

// True when input, weight and (defined) bias are npu tensors of one dtype, bf16 or fp16.
bool isHalfConvolution(const at::Tensor& input, const at::Tensor& weight, const std::optional<at::Tensor>& bias);

// The widened forward on CPU aliases (the caller holds the device guard and has waited for the stream);
// returns a CPU tensor in npu memory (allocated under RedirectToNpu by the caller).
at::Tensor halfConvolutionCpu(const at::Tensor& input, const at::Tensor& weight, const std::optional<at::Tensor>& bias,
                              at::IntArrayRef stride, at::IntArrayRef padding, at::IntArrayRef dilation,
                              bool transposed, at::IntArrayRef output_padding, int64_t groups);

// The widened backward, same contract: (grad_input, grad_weight, grad_bias) as CPU tensors in npu memory.
std::tuple<at::Tensor, at::Tensor, at::Tensor> halfConvolutionBackwardCpu(
    const at::Tensor& grad_output, const at::Tensor& input, const at::Tensor& weight, at::IntArrayRef bias_sizes,
    at::IntArrayRef stride, at::IntArrayRef padding, at::IntArrayRef dilation, bool transposed,
    at::IntArrayRef output_padding, int64_t groups, std::array<bool, 3> output_mask);

}  // namespace npudist::core
