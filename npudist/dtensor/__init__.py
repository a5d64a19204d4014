"""DTensor on npu: torch_npu's fused ops with their DTensor sharding strategies.

``import npudist.dtensor`` registers torch.ops.npu.npu_rms_norm,
npu_rotary_mul, npu_swiglu, npu_fusion_attention (and their backward ops)
with autograd, fake kernels and sharding strategies, so they run on DTensors
under tensor parallelism and FSDP2. See docs/dtensor.md.

Also here: ``python -m npudist.dtensor.coverage`` (which ops run on DTensors
over an npu mesh, compared with a cpu mesh) and npudist.dtensor.sweep (the
op sweep it runs).
"""
from npudist.dtensor import fused_ops  # noqa: F401  (defines torch.ops.npu.*)
from npudist.dtensor import strategies  # noqa: F401  (registers their DTensor sharding strategies)

__all__ = ["fused_ops", "strategies"]
