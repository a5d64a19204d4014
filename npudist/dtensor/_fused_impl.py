"""Math of the npu fused ops, composed from ordinary torch ops.

These functions are the kernels behind torch.ops.npu.npu_rms_norm,
npu_rotary_mul, npu_swiglu, npu_fusion_attention and their backward ops
(registered in npudist.dtensor.fused_ops). They run wherever their inputs
live: on npu (host memory, CPU kernels underneath) or on cpu. Semantics and
output shapes follow torch_npu's documentation of the same ops; where
torch_npu computes in float32 internally, so do these, except that float64
inputs compute in float64 (torch_npu has no float64; gradcheck needs it).
"""
from __future__ import annotations


import torch

INT_MAX = 2147483647
LAYOUTS = ("BSH", "SBH", "BNSD", "BSND")
# torch_npu's sparse_mode values: 0 defaultMask, 1 allMask, 2 leftUpCausal, 3 rightDownCausal,
# 4 band, 5 prefix, 6 prefix (compressed), 7 rightDownCausal band, 8 band leftUpCausal.
SUPPORTED_SPARSE_MODES = (0, 1, 2, 3)


def _acc(dtype: torch.dtype) -> torch.dtype:
    return torch.float64 if dtype == torch.float64 else torch.float32


# --------------------------------------------------------------------------- rms_norm
def _norm_dims(x: torch.Tensor, gamma: torch.Tensor):
    if gamma.dim() == 0 or gamma.dim() > x.dim() or tuple(x.shape[x.dim() - gamma.dim():]) != tuple(gamma.shape):
        raise ValueError(f"npu_rms_norm: gamma's shape {tuple(gamma.shape)} must equal the trailing dims of x "
                         f"{tuple(x.shape)}")
    return tuple(range(x.dim() - gamma.dim(), x.dim()))


def rms_norm(x: torch.Tensor, gamma: torch.Tensor, epsilon: float = 1e-6):
    """y = x * rstd * gamma, rstd = 1/sqrt(mean(x**2 over gamma's dims) + epsilon).

    Returns (y in x.dtype, rstd in float32 — float64 for float64 x — of shape
    x.shape[:-gamma.dim()] + (1,) * gamma.dim()).
    """
    dims = _norm_dims(x, gamma)
    xf = x.to(_acc(x.dtype))
    rstd = torch.rsqrt(xf.pow(2).mean(dim=dims, keepdim=True) + epsilon)
    y = (xf * rstd * gamma.to(xf.dtype)).to(x.dtype)
    return y, rstd


def rms_norm_backward(dy, x, gamma, rstd):
    """Gradients (dx, dgamma) of rms_norm's y, given its saved rstd."""
    dims = _norm_dims(x, gamma)
    acc = _acc(x.dtype)
    xf, dyf, gf = x.to(acc), dy.to(acc), gamma.to(acc)
    rstd = rstd.to(acc)
    xhat = xf * rstd
    lead = tuple(range(x.dim() - gamma.dim()))
    dgamma = (dyf * xhat).sum(dim=lead) if lead else dyf * xhat
    dxhat = dyf * gf
    dx = rstd * (dxhat - xhat * (dxhat * xhat).mean(dim=dims, keepdim=True))
    return dx.to(x.dtype), dgamma.to(gamma.dtype)


# --------------------------------------------------------------------------- rotary_mul
def _check_rotary(x, r1, r2, mode):
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


def rotary_mul(x, r1, r2, rotary_mode="half"):
    """x * r1 + rotate(x) * r2: rotary position embedding with cos (r1) and sin (r2).

    rotate is torch_npu's: "half" = cat(-x2, x1) of x's two halves,
    "interleave" = (-x[1], x[0]) of each adjacent pair. r1, r2 broadcast to x.
    """
    _check_rotary(x, r1, r2, rotary_mode)
    return x * r1 + _rotate(x, rotary_mode) * r2


def rotary_mul_backward(grad, x, r1, r2, rotary_mode="half"):
    """Gradients (dx, dr1, dr2) of rotary_mul; dr1, dr2 are summed to r1's, r2's shapes."""
    _check_rotary(x, r1, r2, rotary_mode)
    dx = grad * r1 + _rotate_transposed(grad * r2, rotary_mode)
    dr1 = _sum_to(grad * x, r1.shape).to(r1.dtype)
    dr2 = _sum_to(grad * _rotate(x, rotary_mode), r2.shape).to(r2.dtype)
    return dx.to(x.dtype), dr1, dr2


# --------------------------------------------------------------------------- swiglu
def _check_swiglu(x, dim):
    if x.dim() == 0 or not -x.dim() <= dim < x.dim() or x.shape[dim] % 2:
        raise ValueError(f"npu_swiglu: dim {dim} of x (shape {tuple(x.shape)}) must exist and have even size")


def swiglu(x, dim=-1):
    """silu(a) * b where a, b = x.chunk(2, dim)."""
    _check_swiglu(x, dim)
    a, b = x.chunk(2, dim=dim)
    acc = _acc(x.dtype)
    return (torch.nn.functional.silu(a.to(acc)) * b.to(acc)).to(x.dtype)


def swiglu_backward(grad_output, x, dim=-1):
    """Gradient of swiglu w.r.t. x (same shape as x)."""
    _check_swiglu(x, dim)
    acc = _acc(x.dtype)
    a, b = (t.to(acc) for t in x.chunk(2, dim=dim))
    g = grad_output.to(acc)
    s = torch.sigmoid(a)
    silu = a * s
    da = g * b * s * (1 + a * (1 - s))
    db = g * silu
    return torch.cat((da, db), dim=dim).to(x.dtype)


# --------------------------------------------------------------------------- fusion_attention
def check_attention_args(query, key, value, head_num, input_layout, pse, padding_mask, atten_mask, keep_prob,
                         pre_tockens, next_tockens, prefix, actual_seq_qlen, actual_seq_kvlen, sparse_mode):
    """Raises NotImplementedError / ValueError for arguments this implementation does not handle."""
    if input_layout not in LAYOUTS:
        raise NotImplementedError(f"npu_fusion_attention: input_layout {input_layout!r} is not supported; "
                                  f"use one of {LAYOUTS} (TND, varlen packing, is not implemented)")
    unsupported = [name for name, v in (("pse", pse), ("padding_mask", padding_mask), ("prefix", prefix),
                                        ("actual_seq_qlen", actual_seq_qlen), ("actual_seq_kvlen", actual_seq_kvlen))
                   if v is not None]
    if unsupported:
        raise NotImplementedError(f"npu_fusion_attention: argument(s) {', '.join(unsupported)} are not supported by "
                                  f"npudist; pass None (supported: query, key, value, head_num, input_layout, "
                                  f"atten_mask, scale, keep_prob, sparse_mode 0-3)")
    if sparse_mode not in SUPPORTED_SPARSE_MODES:
        raise NotImplementedError(f"npu_fusion_attention: sparse_mode={sparse_mode} is not supported; supported are "
                                  f"0 (atten_mask as given), 1 (all mask), 2 (causal, upper-left), "
                                  f"3 (causal, lower-right)")
    if sparse_mode in (0, 1) and (pre_tockens != INT_MAX or next_tockens != INT_MAX):
        raise NotImplementedError("npu_fusion_attention: band attention (pre_tockens/next_tockens other than "
                                  "2147483647) is not supported; pass an explicit atten_mask instead")
    if not 0.0 <= keep_prob <= 1.0:
        raise ValueError(f"npu_fusion_attention: keep_prob must be in [0, 1], got {keep_prob}")
    dims = 3 if input_layout in ("BSH", "SBH") else 4
    for name, t in (("query", query), ("key", key), ("value", value)):
        if t.dim() != dims:
            raise ValueError(f"npu_fusion_attention: {name} must be {dims}-D for layout {input_layout}, "
                             f"got shape {tuple(t.shape)}")
    if head_num <= 0:
        raise ValueError(f"npu_fusion_attention: head_num must be positive, got {head_num}")
    if atten_mask is not None and atten_mask.dtype not in (torch.bool, torch.uint8):
        raise ValueError(f"npu_fusion_attention: atten_mask must be bool or uint8 (1/True = masked out), "
                         f"got {atten_mask.dtype}")


def to_bnsd(query, key, value, head_num, layout):
    """(q, k, v) as (B, N, S, D) tensors (k, v with their own head count)."""
    if layout in ("BNSD", "BSND"):
        # The head count comes from the tensor. head_num must equal it, or be a multiple of it when the
        # op runs on a head shard of a DTensor (the sharding strategy keeps the global head_num).
        n = query.shape[1] if layout == "BNSD" else query.shape[2]
        if head_num % n:
            raise ValueError(f"npu_fusion_attention: head_num={head_num} does not match query's {n} heads "
                             f"(layout {layout}, shape {tuple(query.shape)})")
        return (query, key, value) if layout == "BNSD" else tuple(t.transpose(1, 2) for t in (query, key, value))
    h = query.shape[-1]
    if h % head_num:
        raise ValueError(f"npu_fusion_attention: query's hidden size {h} is not divisible by head_num={head_num}")
    d = h // head_num
    out = []
    for name, t in (("query", query), ("key", key), ("value", value)):
        if t.shape[-1] % d:
            raise ValueError(f"npu_fusion_attention: {name}'s hidden size {t.shape[-1]} is not a multiple of the "
                             f"head dim {d}")
        if layout == "SBH":
            t = t.transpose(0, 1)
        out.append(t.unflatten(-1, (t.shape[-1] // d, d)).transpose(1, 2))
    return tuple(out)


def from_bnsd(out, layout):
    """(B, N, S, D) back to `layout`, contiguous (as the fake kernels promise, and torch_npu returns)."""
    if layout == "BNSD":
        return out.contiguous()
    if layout == "BSND":
        return out.transpose(1, 2).contiguous()
    out = out.transpose(1, 2).flatten(-2)
    return (out.transpose(0, 1) if layout == "SBH" else out).contiguous()


def _mask(atten_mask, sparse_mode, sq, skv, device):
    """Boolean mask broadcastable to (B, N, Sq, Skv), True = masked out; None = nothing masked."""
    if sparse_mode == 2:
        return torch.ones(sq, skv, dtype=torch.bool, device=device).triu(1)
    if sparse_mode == 3:
        return torch.ones(sq, skv, dtype=torch.bool, device=device).triu(skv - sq + 1)
    if atten_mask is None:
        return None
    m = atten_mask.bool()
    try:
        torch.broadcast_shapes(m.shape, (1, 1, sq, skv))
    except RuntimeError:
        raise ValueError(f"npu_fusion_attention: atten_mask of shape {tuple(atten_mask.shape)} does not broadcast "
                         f"to (B, N, Sq, Skv) = (*, *, {sq}, {skv})") from None
    return m


def _expand_kv(k, n):
    nkv = k.shape[1]
    if n % nkv:
        raise ValueError(f"npu_fusion_attention: query has {n} heads, key/value {nkv}; the first must be a multiple "
                         f"of the second (grouped-query attention)")
    return k.repeat_interleave(n // nkv, dim=1) if nkv != n else k


def _scores(q, k, scale, mask):
    s = torch.matmul(q, k.transpose(-1, -2)) * scale
    if mask is not None:
        s = s.masked_fill(mask, torch.finfo(s.dtype).min)
    return s


def _dropout_mask(seed, shape, keep_prob, device):
    gen = torch.Generator(device=device)
    gen.manual_seed(seed)
    return torch.rand(shape, generator=gen, device=device) < keep_prob


def fusion_attention(query, key, value, head_num, input_layout, atten_mask=None, scale=1.0, keep_prob=1.0,
                     sparse_mode=0, seed=0):
    """softmax(mask(q @ k^T * scale)) (dropped out with keep_prob) @ v, in query's layout.

    Returns (attention_out, softmax_max, softmax_sum, softmax_out): max and sum
    of each softmax row broadcast to (B, N, Sq, 8) (torch_npu's shapes), and an
    empty softmax_out (torch_npu returns it empty too).
    """
    q, k, v = to_bnsd(query, key, value, head_num, input_layout)
    acc = _acc(query.dtype)
    n = q.shape[1]
    q, k, v = q.to(acc), _expand_kv(k, n).to(acc), _expand_kv(v, n).to(acc)
    mask = _mask(atten_mask, sparse_mode, q.shape[2], k.shape[2], q.device)
    s = _scores(q, k, scale, mask)
    mx = s.amax(dim=-1, keepdim=True)
    e = torch.exp(s - mx)
    sm = e.sum(dim=-1, keepdim=True)
    p = e / sm
    if keep_prob < 1.0:
        keep = _dropout_mask(seed, p.shape, keep_prob, p.device)
        p = p * keep / keep_prob if keep_prob > 0 else torch.zeros_like(p)
    out = from_bnsd(torch.matmul(p, v).to(query.dtype), input_layout)
    shape8 = (*mx.shape[:-1], 8)
    return out, mx.expand(shape8).contiguous(), sm.expand(shape8).contiguous(), query.new_empty(0)


def fusion_attention_grad(query, key, value, dy, head_num, input_layout, atten_mask, softmax_max, softmax_sum,
                          scale, keep_prob, sparse_mode, seed):
    """(dq, dk, dv) of fusion_attention, recomputing the probabilities from softmax_max/softmax_sum."""
    q, k0, v0 = to_bnsd(query, key, value, head_num, input_layout)
    acc = _acc(query.dtype)
    n, nkv = q.shape[1], k0.shape[1]
    q, k, v = q.to(acc), _expand_kv(k0, n).to(acc), _expand_kv(v0, n).to(acc)
    g = to_bnsd(dy, dy, dy, head_num, input_layout)[0].to(acc)  # dy has query's layout and shape
    mask = _mask(atten_mask, sparse_mode, q.shape[2], k.shape[2], q.device)
    s = _scores(q, k, scale, mask)
    p = torch.exp(s - softmax_max[..., :1].to(acc)) / softmax_sum[..., :1].to(acc)
    if keep_prob < 1.0:
        keep = _dropout_mask(seed, p.shape, keep_prob, p.device).to(acc)
        drop = keep / keep_prob if keep_prob > 0 else torch.zeros_like(p)
    else:
        drop = None
    pd = p * drop if drop is not None else p
    dv = torch.matmul(pd.transpose(-1, -2), g)
    dpd = torch.matmul(g, v.transpose(-1, -2))
    dp = dpd * drop if drop is not None else dpd
    ds = p * (dp - (dp * p).sum(dim=-1, keepdim=True))
    if mask is not None:
        ds = ds.masked_fill(mask, 0)
    dq = torch.matmul(ds, k) * scale
    dk = torch.matmul(ds.transpose(-1, -2), q) * scale
    if nkv != n:  # grouped-query attention: each kv head collects its query heads' gradients
        dk = dk.unflatten(1, (nkv, n // nkv)).sum(2)
        dv = dv.unflatten(1, (nkv, n // nkv)).sum(2)
    dq, dk, dv = (from_bnsd(t, input_layout) for t in (dq, dk, dv))
    return dq.to(query.dtype), dk.to(key.dtype), dv.to(value.dtype)
