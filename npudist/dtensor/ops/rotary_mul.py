"""``torch.ops.npu.npu_rotary_mul`` and ``npu_rotary_mul_backward`` (torch_npu's names and schemas).

    out = torch.ops.npu.npu_rotary_mul(x, cos, sin, rotary_mode="half")   # or "interleave"

out = x * r1 + rotate(x) * r2 (rotary position embedding, r1 = cos, r2 = sin, both broadcast
to x); rotate is torch_npu's: "half" = cat(-x2, x1) of x's two halves, "interleave" =
(-x[1], x[0]) of each adjacent pair. Sharding: Shard on any dim but the last (the rotation
mixes it); r1/r2 are sharded alongside where they have x's full size on that dim, Replicate
where they broadcast (then their gradients are Partial).
"""
from __future__ import annotations

import torch

from npudist.dtensor.ops._library import autograd, define, fake, kernel, sharding

SCHEMAS = {
    "npu_rotary_mul": "npu_rotary_mul(Tensor self, Tensor r1, Tensor r2, str rotary_mode='half') -> Tensor",
    "npu_rotary_mul_backward": "npu_rotary_mul_backward(Tensor grad, Tensor self, Tensor r1, Tensor r2, "
                               "str rotary_mode='half') -> (Tensor, Tensor, Tensor)",
}
define(SCHEMAS)


def _check(x, r1, r2, mode):
    if mode not in ("half", "interleave"):
        raise ValueError(f"npu_rotary_mul: rotary_mode must be 'half' or 'interleave', got {mode!r}")
    if x.shape[-1] % 2:
        raise ValueError(f"npu_rotary_mul: the last dim of x must be even, got shape {tuple(x.shape)}")
    for name, r in (("r1", r1), ("r2", r2)):
        try:
            shape = torch.broadcast_shapes(x.shape, r.shape)
        except RuntimeError:
            shape = None
        if shape != x.shape:
            raise ValueError(f"npu_rotary_mul: {name} of shape {tuple(r.shape)} must broadcast to x's shape "
                             f"{tuple(x.shape)}")


def _rotate(x, mode):
    if mode == "half":
        a, b = x.chunk(2, dim=-1)
        return torch.cat((-b, a), dim=-1)
    pairs = x.unflatten(-1, (-1, 2))
    return torch.stack((-pairs[..., 1], pairs[..., 0]), dim=-1).flatten(-2)


def _rotate_transposed(g, mode):
    # adjoint of _rotate: <rotate(x), g> == <x, rotate_T(g)>
    if mode == "half":
        a, b = g.chunk(2, dim=-1)
        return torch.cat((b, -a), dim=-1)
    pairs = g.unflatten(-1, (-1, 2))
    return torch.stack((pairs[..., 1], -pairs[..., 0]), dim=-1).flatten(-2)


def _sum_to(t, shape):
    lead = t.dim() - len(shape)
    if lead:
        t = t.sum(dim=tuple(range(lead)))
    dims = tuple(i for i, s in enumerate(shape) if s == 1 and t.shape[i] != 1)
    return t.sum(dim=dims, keepdim=True) if dims else t


# ------------------------------------------------------------------ kernels
@kernel("npu_rotary_mul")
def rotary_mul(x, r1, r2, rotary_mode="half"):
    """x * r1 + rotate(x) * r2 (see the module docstring); ValueError for a bad mode, an odd
    last dim or r1/r2 that do not broadcast to x."""
    _check(x, r1, r2, rotary_mode)
    return x * r1 + _rotate(x, rotary_mode) * r2


@kernel("npu_rotary_mul_backward")
def rotary_mul_backward(grad, x, r1, r2, rotary_mode="half"):
    """Gradients (dx, dr1, dr2) of rotary_mul; dr1, dr2 are summed to r1's, r2's shapes."""
    _check(x, r1, r2, rotary_mode)
    dx = grad * r1 + _rotate_transposed(grad * r2, rotary_mode)
    dr1 = _sum_to(grad * x, r1.shape).to(r1.dtype)
    dr2 = _sum_to(grad * _rotate(x, rotary_mode), r2.shape).to(r2.dtype)
    return dx.to(x.dtype), dr1, dr2


# ------------------------------------------------------------------ fake kernels
@fake("npu_rotary_mul")
def _rotary_mul_fake(x, r1, r2, rotary_mode="half"):
    _check(x, r1, r2, rotary_mode)
    return x.new_empty(x.shape)


@fake("npu_rotary_mul_backward")
def _rotary_mul_backward_fake(grad, x, r1, r2, rotary_mode="half"):
    return x.new_empty(x.shape), r1.new_empty(r1.shape), r2.new_empty(r2.shape)


# ------------------------------------------------------------------ autograd
def _setup(ctx, inputs, output):
    x, r1, r2, mode = inputs
    ctx.save_for_backward(x, r1, r2)
    ctx.mode = mode


def _backward(ctx, grad):
    x, r1, r2 = ctx.saved_tensors
    dx, dr1, dr2 = torch.ops.npu.npu_rotary_mul_backward(grad, x, r1, r2, ctx.mode)
    return dx, dr1, dr2, None


autograd("npu_rotary_mul", _backward, _setup)


# ------------------------------------------------------------------ sharding strategies
@sharding("npu_rotary_mul")
def rotary_mul_strategy(x, r1, r2, rotary_mode="half"):
    from npudist.dtensor.ops._placement import R, Shard, broadcast_placement

    out = [([R], [R, R, R, None])]
    for d in range(x.ndim - 1):
        out.append(([Shard(d)], [Shard(d)] + [broadcast_placement(r, x, d, Shard(d), R) for r in (r1, r2)] + [None]))
    return out


@sharding("npu_rotary_mul_backward")
def rotary_mul_backward_strategy(grad, x, r1, r2, rotary_mode="half"):
    from npudist.dtensor.ops._placement import Partial, R, Shard, broadcast_placement

    out = [([R, R, R], [R, R, R, R, None])]
    for d in range(x.ndim - 1):
        rin = [broadcast_placement(r, x, d, Shard(d), R) for r in (r1, r2)]
        rgrad = [broadcast_placement(r, x, d, Shard(d), Partial()) for r in (r1, r2)]
        out.append(([Shard(d)] + rgrad, [Shard(d), Shard(d)] + rin + [None]))
    return out
