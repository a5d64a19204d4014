"""``torch.ops.npu.npu_rms_norm`` and ``npu_rms_norm_backward`` (torch_npu's names and schemas).

    y, rstd = torch.ops.npu.npu_rms_norm(x, gamma, epsilon=1e-6)

y = x * rstd * gamma with rstd = 1/sqrt(mean(x**2 over gamma's dims) + epsilon); y has x's
dtype, rstd is float32 (float64 for float64 x) of shape ``x.shape[:-gamma.dim()] + (1,) *
gamma.dim()`` and is not differentiable (as in torch_npu). Sharding: Shard on any dim that is
not normalized (gamma Replicate); the backward gives dgamma as Partial (sum); all Replicate
always works.
"""
from __future__ import annotations

import torch

from npudist.dtensor.ops._library import acc_dtype, autograd, define, fake, kernel, sharding

SCHEMAS = {
    "npu_rms_norm": "npu_rms_norm(Tensor self, Tensor gamma, float epsilon=1e-06) -> (Tensor, Tensor)",
    "npu_rms_norm_backward": "npu_rms_norm_backward(Tensor dy, Tensor self, Tensor gamma, Tensor rstd) "
                             "-> (Tensor, Tensor)",
}
define(SCHEMAS)


def _norm_dims(x: torch.Tensor, gamma: torch.Tensor):
    if gamma.dim() == 0 or gamma.dim() > x.dim() or tuple(x.shape[x.dim() - gamma.dim():]) != tuple(gamma.shape):
        raise ValueError(f"npu_rms_norm: gamma's shape {tuple(gamma.shape)} must equal the trailing dims of x "
                         f"{tuple(x.shape)}")
    return tuple(range(x.dim() - gamma.dim(), x.dim()))


# ------------------------------------------------------------------ kernels
@kernel("npu_rms_norm")
def rms_norm(x: torch.Tensor, gamma: torch.Tensor, epsilon: float = 1e-6):
    """(y, rstd) as described in the module docstring; ValueError when gamma's shape is not
    x's trailing shape."""
    dims = _norm_dims(x, gamma)
    xf = x.to(acc_dtype(x.dtype))
    rstd = torch.rsqrt(xf.pow(2).mean(dim=dims, keepdim=True) + epsilon)
    y = (xf * rstd * gamma.to(xf.dtype)).to(x.dtype)
    return y, rstd


@kernel("npu_rms_norm_backward")
def rms_norm_backward(dy, x, gamma, rstd):
    """Gradients (dx, dgamma) of rms_norm's y, given its saved rstd."""
    dims = _norm_dims(x, gamma)
    acc = acc_dtype(x.dtype)
    xf, dyf, gf = x.to(acc), dy.to(acc), gamma.to(acc)
    rstd = rstd.to(acc)
    xhat = xf * rstd
    lead = tuple(range(x.dim() - gamma.dim()))
    dgamma = (dyf * xhat).sum(dim=lead) if lead else dyf * xhat
    dxhat = dyf * gf
    dx = rstd * (dxhat - xhat * (dxhat * xhat).mean(dim=dims, keepdim=True))
    return dx.to(x.dtype), dgamma.to(gamma.dtype)


# ------------------------------------------------------------------ fake kernels
@fake("npu_rms_norm")
def _rms_norm_fake(x, gamma, epsilon=1e-6):
    _norm_dims(x, gamma)
    acc = acc_dtype(x.dtype)
    return x.new_empty(x.shape), x.new_empty((*x.shape[:x.dim() - gamma.dim()], *([1] * gamma.dim())), dtype=acc)


@fake("npu_rms_norm_backward")
def _rms_norm_backward_fake(dy, x, gamma, rstd):
    return x.new_empty(x.shape), gamma.new_empty(gamma.shape)


# ------------------------------------------------------------------ autograd
def _setup(ctx, inputs, output):
    x, gamma, _ = inputs
    ctx.save_for_backward(x, gamma, output[1])
    ctx.mark_non_differentiable(output[1])


def _backward(ctx, grad_y, grad_rstd):
    x, gamma, rstd = ctx.saved_tensors
    dx, dgamma = torch.ops.npu.npu_rms_norm_backward(grad_y, x, gamma, rstd)
    return dx, dgamma, None


autograd("npu_rms_norm", _backward, _setup)


# ------------------------------------------------------------------ sharding strategies
@sharding("npu_rms_norm")
def rms_norm_strategy(x, gamma, epsilon=1e-6):
    from npudist.dtensor.ops._placement import R, Shard, replicate_all

    out = [([R, R], replicate_all(x, gamma, epsilon))]
    for d in range(x.ndim - gamma.ndim):
        out.append(([Shard(d), Shard(d)], [Shard(d), R, None]))
    return out


@sharding("npu_rms_norm_backward")
def rms_norm_backward_strategy(dy, x, gamma, rstd):
    from npudist.dtensor.ops._placement import Partial, R, Shard

    out = [([R, R], [R, R, R, R])]
    for d in range(x.ndim - gamma.ndim):
        out.append(([Shard(d), Partial()], [Shard(d), Shard(d), R, Shard(d)]))
    return out
