// The zero-copy boxed fallback: runs any op without an npu kernel with
// PyTorch's CPU kernel directly on npu memory. Inputs become CPU aliases of the
// same memory, the CPU kernel runs with its allocations redirected to the npu
// allocator, and outputs are retagged as npu tensors — no copies in or out.
#pragma once

#include <ATen/core/dispatch/Dispatcher.h>

namespace npudist::core {

void npuFallback(const c10::OperatorHandle& op, torch::jit::Stack* stack);
// The same for quantized npu tensors (QuantizedPrivateUse1): runs the
// QuantizedCPU kernel on aliases that share each tensor's quantizer.
void npuQuantizedFallback(const c10::OperatorHandle& op, torch::jit::Stack* stack);

}  // namespace npudist::core
