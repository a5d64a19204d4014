// Random ops on npu draw from the npu generator (core/generator.h).
#pragma once

#include <ATen/core/dispatch/Dispatcher.h>

#include <tuple>

namespace npudist::core {

// Boxed kernel for every op with a `Generator?` argument and a CPU kernel:
// takes the op's npu generator (or the device's default), runs the CPU kernel
// zero-copy with an engine keyed by the generator's (seed, offset), then
// advances the offset by the number of values produced.
void npuRandomFallback(const c10::OperatorHandle& op, torch::jit::Stack* stack);

// True for schemas with a Generator argument.
bool takesGenerator(const c10::FunctionSchema& schema);

// Dropout as the CPU kernel computes it (mask ~ Bernoulli(1-p), output
// scaled by 1/(1-p)), drawing the mask from the npu generator.
std::tuple<at::Tensor, at::Tensor> native_dropout(const at::Tensor& input, double p, std::optional<bool> train);

}  // namespace npudist::core
