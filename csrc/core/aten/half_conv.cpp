#include "core/aten/half_conv.h"

#include <ATen/ops/convolution.h>
#include <ATen/ops/convolution_backward.h>

#include "core/aten/half_gemm.h"

namespace npudist::core {
namespace {

at::Tensor widen(const at::Tensor& t) { return t.defined() ? t.to(at::kFloat) : t; }

at::Tensor narrow(const at::Tensor& t, c10::ScalarType dtype) { return t.defined() ? t.to(dtype) : t; }

}  // namespace

bool isHalfConvolution(const at::Tensor& input, const at::Tensor& weight, const std::optional<at::Tensor>& bias) {
  c10::ScalarType dtype = input.scalar_type();
  if (!isHalfPrecision(dtype) || !halfKernelsEnabled() || weight.scalar_type() != dtype || !input.is_privateuseone() ||
      !weight.is_privateuseone())
    return false;
  if (bias && bias->defined() && (bias->scalar_type() != dtype || !bias->is_privateuseone())) return false;
  return input.layout() == c10::Layout::Strided && weight.layout() == c10::Layout::Strided;
}

at::Tensor halfConvolutionCpu(const at::Tensor& input, const at::Tensor& weight, const std::optional<at::Tensor>& bias,
                              at::IntArrayRef stride, at::IntArrayRef padding, at::IntArrayRef dilation,
                              bool transposed, at::IntArrayRef output_padding, int64_t groups) {
  std::optional<at::Tensor> bias_f;
  if (bias && bias->defined()) bias_f = widen(*bias);
  at::Tensor out = at::convolution(widen(input), widen(weight), bias_f, stride, padding, dilation, transposed,
                                   output_padding, groups);
  // The fp32 result keeps the layout PyTorch's CPU convolution chose (channels-last follows the input).
  return out.to(input.scalar_type());
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> halfConvolutionBackwardCpu(
    const at::Tensor& grad_output, const at::Tensor& input, const at::Tensor& weight, at::IntArrayRef bias_sizes,
    at::IntArrayRef stride, at::IntArrayRef padding, at::IntArrayRef dilation, bool transposed,
    at::IntArrayRef output_padding, int64_t groups, std::array<bool, 3> output_mask) {
  c10::ScalarType dtype = input.scalar_type();
  auto [gi, gw, gb] = at::convolution_backward(widen(grad_output), widen(input), widen(weight), bias_sizes, stride,
                                               padding, dilation, transposed, output_padding, groups, output_mask);
  return {narrow(gi, dtype), narrow(gw, dtype), narrow(gb, dtype)};
}

}  // namespace npudist::core
