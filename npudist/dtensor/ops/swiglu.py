"""``torch.ops.npu.npu_swiglu`` and ``npu_swiglu_backward`` (torch_npu's names and schemas).

    out = torch.ops.npu.npu_swiglu(x, dim=-1)

out = silu(a) * b where a, b = x.chunk(2, dim) (computed in float32, float64 for float64 x);
out has x's dtype and half its size on ``dim``. Sharding: Shard on any dim but ``dim``.
"""
from __future__ import annotations

import torch

from npudist.dtensor.ops._library import acc_dtype, autograd, define, fake, kernel, sharding

SCHEMAS = {
    "npu_swiglu": "npu_swiglu(Tensor self, int dim=-1) -> Tensor",
    "npu_swiglu_backward": "npu_swiglu_backward(Tensor grad_output, Tensor self, int dim=-1) -> Tensor",
}
define(SCHEMAS)


def _check(x, dim):
    if x.dim() == 0 or not -x.dim() <= dim < x.dim() or x.shape[dim] % 2:
        raise ValueError(f"npu_swiglu: dim {dim} of x (shape {tuple(x.shape)}) must exist and have even size")


# ------------------------------------------------------------------ kernels
@kernel("npu_swiglu")
def swiglu(x, dim=-1):
    """silu(a) * b where a, b = x.chunk(2, dim); ValueError when ``dim`` is missing or odd-sized."""
    _check(x, dim)
    a, b = x.chunk(2, dim=dim)
    acc = acc_dtype(x.dtype)
    return (torch.nn.functional.silu(a.to(acc)) * b.to(acc)).to(x.dtype)


@kernel("npu_swiglu_backward")
def swiglu_backward(grad_output, x, dim=-1):
    """Gradient of swiglu w.r.t. x (same shape as x)."""
    _check(x, dim)
    acc = acc_dtype(x.dtype)
    a, b = (t.to(acc) for t in x.chunk(2, dim=dim))
    g = grad_output.to(acc)
    s = torch.sigmoid(a)
    silu = a * s
    da = g * b * s * (1 + a * (1 - s))
    db = g * silu
    return torch.cat((da, db), dim=dim).to(x.dtype)


# ------------------------------------------------------------------ fake kernels
@fake("npu_swiglu")
def _swiglu_fake(x, dim=-1):
    _check(x, dim)
    shape = list(x.shape)
    shape[dim] //= 2
    return x.new_empty(shape)


@fake("npu_swiglu_backward")
def _swiglu_backward_fake(grad_output, x, dim=-1):
    return x.new_empty(x.shape)


# ------------------------------------------------------------------ autograd
def _setup(ctx, inputs, output):
    x, dim = inputs
    ctx.save_for_backward(x)
    ctx.dim = dim


def _backward(ctx, grad):
    (x,) = ctx.saved_tensors
    return torch.ops.npu.npu_swiglu_backward(grad, x, ctx.dim), None


autograd("npu_swiglu", _backward, _setup)


# ------------------------------------------------------------------ sharding strategies
def _other_dims(x, dim):
    dim = dim % x.ndim
    return [d for d in range(x.ndim) if d != dim]


@sharding("npu_swiglu")
def swiglu_strategy(x, dim=-1):
    from npudist.dtensor.ops._placement import R, Shard

    return [([R], [R, None])] + [([Shard(d)], [Shard(d), None]) for d in _other_dims(x, dim)]


@sharding("npu_swiglu_backward")
def swiglu_backward_strategy(grad_output, x, dim=-1):
    from npudist.dtensor.ops._placement import R, Shard

    return [([R], [R, R, None])] + [([Shard(d)], [Shard(d), Shard(d), None]) for d in _other_dims(x, dim)]
