// Routes ops that have a dedicated CPU kernel to the fallback (and so to that
// CPU kernel) on npu, instead of PyTorch's CompositeExplicitAutograd
// decomposition that a backend without its own kernel would otherwise get.
// npu results then equal cpu results bit for bit, at CPU kernel speed
// (e.g. native_layer_norm runs the fused CPU kernel, not the math version).
#pragma once

namespace npudist::core {

// Registers the fallback as the npu kernel of every aten op that has a CPU
// kernel, no npu kernel, no CompositeImplicitAutograd kernel (its autograd
// comes from the decomposition) and does not return a view. Idempotent.
// Ops with a Generator argument go to npuRandomFallback (random_ops.h).
// Returns the number of ops routed.
int routeCpuKernelOpsToFallback();

}  // namespace npudist::core
