"""DTensor sharding strategies for the npu fused ops (npudist.dtensor.fused_ops).

Registered through torch.distributed.tensor.experimental.register_sharding,
PyTorch's public hook for custom ops. Each function lists, for one mesh
dimension, the acceptable (output placements, input placements) pairs; DTensor
expands them over every mesh dimension and redistributes inputs to the
cheapest one. What each op accepts:

- npu_rms_norm / _backward: Shard on any dim that is not normalized (gamma's
  dims), gamma Replicate; backward gives dgamma as Partial (sum). All
  Replicate always works.
- npu_rotary_mul / _backward: Shard on any dim but the last (rotation mixes
  it); r1/r2 are sharded alongside where they have the full size on that dim,
  Replicate where they broadcast (then their gradients are Partial).
- npu_swiglu / _backward: Shard on any dim but the one split into halves.
- npu_fusion_attention / _grad: Shard on batch (every layout) or on heads
  (BNSD and BSND layouts, where the head count comes from the tensor); the
  softmax statistics (B, N, Sq, 8) follow on their dim 0 or 1; atten_mask is
  sharded alongside when it has full B (or N) size there, else Replicate.
  Sequence sharding would need ring attention: not offered (DTensor
  all-gathers instead). Head sharding for BSH/SBH is not offered either: the
  op's head_num argument is global and a shard cannot tell its own count.
"""
from __future__ import annotations

import torch
from torch.distributed.tensor import Partial, Replicate, Shard
from torch.distributed.tensor._dtensor_spec import DTensorSpec
from torch.distributed.tensor.experimental import register_sharding

from npudist.dtensor import fused_ops  # noqa: F401  (the ops must exist first)

npu = torch.ops.npu
R = Replicate()


def _is_t(a):
    return isinstance(a, DTensorSpec)


def _rep(*args):
    return [R if _is_t(a) else None for a in args]


def _norm_lead(x, gamma):
    return range(x.ndim - gamma.ndim)


@register_sharding(npu.npu_rms_norm.default)
def rms_norm_strategy(x, gamma, epsilon=1e-6):
    out = [([R, R], _rep(x, gamma, epsilon))]
    for d in _norm_lead(x, gamma):
        out.append(([Shard(d), Shard(d)], [Shard(d), R, None]))
    return out


@register_sharding(npu.npu_rms_norm_backward.default)
def rms_norm_backward_strategy(dy, x, gamma, rstd):
    out = [([R, R], [R, R, R, R])]
    for d in _norm_lead(x, gamma):
        out.append(([Shard(d), Partial()], [Shard(d), Shard(d), R, Shard(d)]))
    return out


def _bcast_placement(r, x, d, sharded, broadcast):
    """Placement of r (broadcast to x, right-aligned) when x is sharded on d."""
    rd = d - (x.ndim - r.ndim)
    if rd >= 0 and r.shape[rd] == x.shape[d]:
        return sharded
    return broadcast


@register_sharding(npu.npu_rotary_mul.default)
def rotary_mul_strategy(x, r1, r2, rotary_mode="half"):
    out = [([R], [R, R, R, None])]
    for d in range(x.ndim - 1):
        out.append(([Shard(d)], [Shard(d)] + [_bcast_placement(r, x, d, Shard(d), R) for r in (r1, r2)] + [None]))
    return out


@register_sharding(npu.npu_rotary_mul_backward.default)
def rotary_mul_backward_strategy(grad, x, r1, r2, rotary_mode="half"):
    out = [([R, R, R], [R, R, R, R, None])]
    for d in range(x.ndim - 1):
        rin = [_bcast_placement(r, x, d, Shard(d), R) for r in (r1, r2)]
        rgrad = [_bcast_placement(r, x, d, Shard(d), Partial()) for r in (r1, r2)]
        out.append(([Shard(d)] + rgrad, [Shard(d), Shard(d)] + rin + [None]))
    return out


def _other_dims(x, dim):
    dim = dim % x.ndim
    return [d for d in range(x.ndim) if d != dim]


@register_sharding(npu.npu_swiglu.default)
def swiglu_strategy(x, dim=-1):
    return [([R], [R, None])] + [([Shard(d)], [Shard(d), None]) for d in _other_dims(x, dim)]


@register_sharding(npu.npu_swiglu_backward.default)
def swiglu_backward_strategy(grad_output, x, dim=-1):
    return [([R], [R, R, None])] + [([Shard(d)], [Shard(d), Shard(d), None]) for d in _other_dims(x, dim)]


# (batch dim, head dim or None) of q/k/v/out per layout; the statistics (B, N, Sq, 8) use dims 0 and 1.
_ATTN_DIMS = {"BSH": (0, None), "SBH": (1, None), "BNSD": (0, 1), "BSND": (0, 2)}


def _mask_placement(mask, qdim_size, stat_dim):
    """atten_mask (broadcast to (B, N, Sq, Skv), right-aligned) follows the B or N split when it has that dim."""
    md = stat_dim - (4 - mask.ndim)
    if md >= 0 and mask.shape[md] == qdim_size and qdim_size > 1:
        return Shard(md)
    return R


def _attention_splits(query, head_num, input_layout):
    """[(qkv dim, statistics dim, size)] for the splits this layout allows."""
    bdim, ndim = _ATTN_DIMS.get(input_layout, (None, None))
    splits = []
    if bdim is not None:
        splits.append((bdim, 0, query.shape[bdim]))
    if ndim is not None:
        splits.append((ndim, 1, query.shape[ndim]))
    return splits


@register_sharding(npu.npu_fusion_attention.default)
def fusion_attention_strategy(query, key, value, head_num, input_layout, pse=None, padding_mask=None,
                              atten_mask=None, *args, **kwargs):
    rest = list(args) + list(kwargs.values())
    before = [query, key, value, head_num, input_layout, pse, padding_mask, atten_mask]
    outs_r = [R, R, R, R, None, None, None]
    out = [(outs_r, _rep(*before, *rest))]
    for qd, sd, size in _attention_splits(query, head_num, input_layout):
        ins = [Shard(qd)] * 3 + [None, None] + _rep(pse, padding_mask)
        ins.append(_mask_placement(atten_mask, size, sd) if _is_t(atten_mask) else None)
        out.append(([Shard(qd), Shard(sd), Shard(sd), R, None, None, None], ins + _rep(*rest)))
    return out


def attention_grad_mask_placements(mask, softmax_max, query, head_num, input_layout):
    """Placements for atten_mask that match the split the forward op chose (read from softmax_max's
    placements): the autograd formula redistributes the mask to them before calling the grad op, because
    DTensor does not redistribute keyword-only arguments."""
    size_of = {sd: size for _, sd, size in _attention_splits(query, head_num, input_layout)}
    out = []
    for p in softmax_max.placements:
        if isinstance(p, Shard) and p.dim in size_of:
            out.append(_mask_placement(mask, size_of[p.dim], p.dim))
        else:
            out.append(R)
    return out


@register_sharding(npu.npu_fusion_attention_grad.default)
def fusion_attention_grad_strategy(query, key, value, dy, head_num, input_layout, *args, **kwargs):
    # Tensor kwargs: pse, padding_mask, atten_mask, softmax_max, softmax_sum, softmax_in, attention_in.
    names = list(kwargs)
    vals = [kwargs[k] for k in names]
    out = [([R, R, R, R], [R, R, R, R, None, None] + _rep(*args) + _rep(*vals))]
    for qd, sd, size in _attention_splits(query, head_num, input_layout):
        ins = [Shard(qd)] * 4 + [None, None] + _rep(*args)
        for name, v in zip(names, vals):
            if not _is_t(v):
                ins.append(None)
            elif name in ("softmax_max", "softmax_sum"):
                ins.append(Shard(sd))
            elif name == "attention_in":
                ins.append(Shard(qd))
            elif name == "atten_mask":
                ins.append(_mask_placement(v, size, sd))
            else:
                ins.append(R)
        out.append(([Shard(qd), Shard(qd), Shard(qd), R], ins))
    # DTensor does not redistribute keyword-only tensors (its dispatcher skips kwargs), and all of this
    # op's optional tensors are keyword-only: keep the strategies that take them as they are.
    kw = [(6 + len(args) + j, v.placements) for j, v in enumerate(vals) if _is_t(v)]
    keep = [(outs, ins) for outs, ins in out if all(ins[i] in current for i, current in kw)]
    return keep or out


STRATEGIES = {
    "npu_rms_norm": rms_norm_strategy, "npu_rms_norm_backward": rms_norm_backward_strategy,
    "npu_rotary_mul": rotary_mul_strategy, "npu_rotary_mul_backward": rotary_mul_backward_strategy,
    "npu_swiglu": swiglu_strategy, "npu_swiglu_backward": swiglu_backward_strategy,
    "npu_fusion_attention": fusion_attention_strategy, "npu_fusion_attention_grad": fusion_attention_grad_strategy,
}
