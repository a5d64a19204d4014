// Routes ops that have a dedicated CPU kernel to the fallback (and so to that
// CPU kernel) on npu, instead of PyTorch's CompositeExplicitAutograd
// decomposition that a backend without its own kernel would otherwise get.
// npu results then equal cpu results bit for bit, at CPU kernel speed
// (e.g. native_layer_norm runs the fused CPU kernel, not the math version).
#pragma once

namespace npudist::core {

// Registers the fallback as the npu kernel of every aten op that has a CPU
// kernel, no npu kernel, and does not return a view (views must stay
// metadata-only). Ops with a CompositeImplicitAutograd kernel as well
// (silu_backward, mish_backward, native_channel_shuffle) then behave exactly
// as on cpu, which also has a direct kernel for them. Idempotent.
// Ops with a Generator argument go to npuRandomFallback (random_ops.h).
// Returns the number of ops routed.
int routeCpuKernelOpsToFallback();

}  // namespace npudist::core
