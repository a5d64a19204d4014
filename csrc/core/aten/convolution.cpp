#include "core/aten/convolution.h"

#include <ATen/ops/convolution.h>
#include <ATen/ops/convolution_backward.h>
#include <c10/core/DeviceGuard.h>

#include "core/allocator/cpu_redirect.h"
#include "core/aten/cpu_alias.h"
#include "core/aten/half_conv.h"
#include "core/graph/capture_state.h"
#include "core/stream.h"

namespace npudist::core {
namespace {

at::Tensor npu(const at::Tensor& t, c10::DeviceIndex device) { return t.defined() ? adoptCpuResult(t, device) : t; }

}  // namespace

at::Tensor convolution_overrideable(const at::Tensor& input, const at::Tensor& weight,
                                    const std::optional<at::Tensor>& bias, at::IntArrayRef stride,
                                    at::IntArrayRef padding, at::IntArrayRef dilation, bool transposed,
                                    at::IntArrayRef output_padding, int64_t groups) {
  c10::DeviceIndex device = input.device().index();
  c10::DeviceGuard guard(input.device());
  if (C10_UNLIKELY(graph::anyCapture()))
    if (graph::Capture* c = graph::captureOfCurrent(device))
      graph::failOnCapturingStream(c, "aten::convolution on npu (not capturable yet; see docs/graph.md, Limits)");
  waitCurrentStream(device);
  std::optional<at::Tensor> cpu_bias = bias && bias->defined() ? std::optional<at::Tensor>(cpuOrAlias(*bias)) : bias;
  RedirectToNpu redirect(device);
  // bf16/fp16: fp32 accumulation, one rounding (half_conv.h), not the CPU's half-precision kernel.
  if (isHalfConvolution(input, weight, bias))
    return npu(halfConvolutionCpu(cpuOrAlias(input), cpuOrAlias(weight), cpu_bias, stride, padding, dilation,
                                  transposed, output_padding, groups),
               device);
  at::Tensor out = at::convolution(cpuOrAlias(input), cpuOrAlias(weight), cpu_bias, stride, padding, dilation,
                                   transposed, output_padding, groups);
  return npu(out, device);
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> convolution_backward_overrideable(
    const at::Tensor& grad_output, const at::Tensor& input, const at::Tensor& weight, at::IntArrayRef stride,
    at::IntArrayRef padding, at::IntArrayRef dilation, bool transposed, at::IntArrayRef output_padding, int64_t groups,
    std::array<bool, 3> output_mask) {
  c10::DeviceIndex device = input.device().index();
  c10::DeviceGuard guard(input.device());
  if (C10_UNLIKELY(graph::anyCapture()))
    if (graph::Capture* c = graph::captureOfCurrent(device))
      graph::failOnCapturingStream(c, "aten::convolution on npu (not capturable yet; see docs/graph.md, Limits)");
  waitCurrentStream(device);
  // The bias gradient's length is the number of output channels.
  int64_t out_channels = transposed ? weight.size(1) * groups : weight.size(0);
  std::vector<int64_t> bias_sizes = {out_channels};
  RedirectToNpu redirect(device);
  if (isHalfConvolution(input, weight, std::nullopt) && grad_output.scalar_type() == input.scalar_type() &&
      grad_output.is_privateuseone()) {
    auto [gi, gw, gb] =
        halfConvolutionBackwardCpu(cpuOrAlias(grad_output), cpuOrAlias(input), cpuOrAlias(weight), bias_sizes, stride,
                                   padding, dilation, transposed, output_padding, groups, output_mask);
    return {npu(gi, device), npu(gw, device), npu(gb, device)};
  }
  auto [gi, gw, gb] =
      at::convolution_backward(cpuOrAlias(grad_output), cpuOrAlias(input), cpuOrAlias(weight), bias_sizes, stride,
                               padding, dilation, transposed, output_padding, groups, output_mask);
  return {npu(gi, device), npu(gw, device), npu(gb, device)};
}

}  // namespace npudist::core
