"""DTensor on npu: torch_npu's fused ops with their DTensor sharding strategies.

``import npudist.dtensor`` registers torch.ops.npu.npu_rms_norm, npu_rotary_mul, npu_swiglu,
npu_fusion_attention (and their backward ops) with autograd, fake kernels and sharding
strategies, so they run on DTensors under tensor parallelism and FSDP2. The ops live one per
module in :mod:`npudist.dtensor.ops`; their sharding strategies reach DTensor when
torch.distributed.tensor is imported (at once if it already is), so neither this package nor
``npudist.dtensor.ops`` imports DTensor itself. See docs/dtensor.md.

The DTensor op sweep and coverage report are test tools: ``python -m
npudist.testing.dtensor_coverage`` (npudist.testing.dtensor_sweep runs the sweep).
"""
from npudist.dtensor import ops
from npudist.dtensor.ops import register_strategies

__all__ = ["ops", "register_strategies"]
