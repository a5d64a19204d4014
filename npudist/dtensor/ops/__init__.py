"""torch_npu's fused ops under ``torch.ops.npu``, one module per op.

``import npudist.dtensor.ops`` defines, with torch_npu's names and schemas::

    y, rstd = torch.ops.npu.npu_rms_norm(x, gamma, epsilon=1e-6)           # rms_norm.py
    out = torch.ops.npu.npu_rotary_mul(x, cos, sin, rotary_mode="half")    # rotary_mul.py
    out = torch.ops.npu.npu_swiglu(x, dim=-1)                              # swiglu.py
    out, smax, ssum, sout, seed, offset, numels = torch.ops.npu.npu_fusion_attention(
        q, k, v, head_num, "BSH", atten_mask=mask, scale=d ** -0.5)        # fusion_attention.py

and their torch_npu backward ops (npu_rms_norm_backward, npu_rotary_mul_backward,
npu_swiglu_backward, npu_fusion_attention_grad). Each op module holds the op's schema,
kernels (ordinary torch ops, registered for npu and cpu), fake kernel, autograd formula and
DTensor sharding strategy; ``_library`` is the registration plumbing, ``_placement`` the
placement helpers the strategies share.

Importing this package is cheap: torch only, not torch.distributed.tensor (about a second).
The sharding strategies reach DTensor when torch.distributed.tensor is imported: at once when
it already is, else right after its first import (a one-shot import hook in ``_library``), so
any code that makes a DTensor finds them. ``register_strategies()`` does it explicitly.
"""
from npudist.dtensor.ops import fusion_attention, rms_norm, rotary_mul, swiglu  # define the ops
from npudist.dtensor.ops._library import SCHEMAS, STRATEGIES, register_strategies

FORWARD_OPS = ("npu_rms_norm", "npu_rotary_mul", "npu_swiglu", "npu_fusion_attention")
ALL_OPS = tuple(SCHEMAS)

__all__ = ["ALL_OPS", "FORWARD_OPS", "SCHEMAS", "STRATEGIES", "register_strategies", "fusion_attention",
           "rms_norm", "rotary_mul", "swiglu"]
