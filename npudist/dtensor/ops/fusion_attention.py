"""``torch.ops.npu.npu_fusion_attention`` and ``npu_fusion_attention_grad`` (torch_npu's names
and schemas).

    out, smax, ssum, sout, seed, offset, numels = torch.ops.npu.npu_fusion_attention(
        q, k, v, head_num, "BSH", atten_mask=mask, scale=d ** -0.5, keep_prob=1.0, sparse_mode=0)

softmax(mask(q @ k^T * scale)) (dropped out with keep_prob) @ v in query's layout (BSH, SBH,
BNSD, BSND; grouped-query attention when k/v have fewer heads). softmax_max / softmax_sum are
each softmax row's max and sum broadcast to (B, N, Sq, 8), softmax_out is empty (torch_npu's
shapes); they and the ints are not differentiable. The dropout seed comes from the device's
default generator. Not implemented (NotImplementedError naming the argument): pse,
padding_mask, prefix, actual_seq_qlen/kvlen (TND) and sparse_mode 5-8 (prefix and varlen).

Masks and tokens follow torch_npu's documentation of the op (op-plugin,
docs/context/torch_npu-npu_fusion_attention.md; see :func:`resolve_mask`): with atten_mask=None
nothing is masked whatever sparse_mode and pre/next_tockens say; 0 takes atten_mask and
computes only the band pre_tockens/next_tockens around the diagonal (upper-left origin);
1 takes atten_mask as given and ignores the tokens; 2, 3 and 4 take torch_npu's compressed
(2048, 2048) upper-triangular mask and mean causal from the upper-left corner, causal from the
lower-right corner, and the pre/next_tockens band from the lower-right corner.

Sharding: Shard on batch (every layout) or on heads (BNSD and BSND, where the head count comes
from the tensor); the softmax statistics follow on their dim 0 or 1; atten_mask is sharded
alongside when it has full B (or N) size there, else Replicate. Sequence sharding would need
ring attention: not offered (DTensor all-gathers instead). Head sharding for BSH/SBH is not
offered either: head_num is global and a shard cannot tell its own count.
"""
from __future__ import annotations

import sys

import torch

from npudist.dtensor.ops._library import INT_MAX, acc_dtype, autograd, define, fake, kernel, sharding

SCHEMAS = {
    "npu_fusion_attention": (
        "npu_fusion_attention(Tensor query, Tensor key, Tensor value, int head_num, str input_layout, "
        "Tensor? pse=None, Tensor? padding_mask=None, Tensor? atten_mask=None, float scale=1., "
        "float keep_prob=1., int pre_tockens=2147483647, int next_tockens=2147483647, int inner_precise=0, "
        "int[]? prefix=None, int[]? actual_seq_qlen=None, int[]? actual_seq_kvlen=None, int sparse_mode=0, "
        "bool gen_mask_parallel=True, bool sync=False) -> (Tensor, Tensor, Tensor, Tensor, int, int, int)"),
    "npu_fusion_attention_grad": (
        "npu_fusion_attention_grad(Tensor query, Tensor key, Tensor value, Tensor dy, int head_num, "
        "str input_layout, *, Tensor? pse=None, Tensor? padding_mask=None, Tensor? atten_mask=None, "
        "Tensor? softmax_max=None, Tensor? softmax_sum=None, Tensor? softmax_in=None, Tensor? attention_in=None, "
        "float scale_value=1., float keep_prob=1., int pre_tockens=2147483647, int next_tockens=2147483647, "
        "int inner_precise=0, int seed=0, int offset=0, int numels=0, int[]? prefix=None, "
        "int[]? actual_seq_qlen=None, int[]? actual_seq_kvlen=None, int sparse_mode=0, "
        "bool gen_mask_parallel=True, bool sync=False) -> (Tensor, Tensor, Tensor, Tensor)"),
}
define(SCHEMAS, tags={"npu_fusion_attention": (torch.Tag.nondeterministic_seeded,)})

LAYOUTS = ("BSH", "SBH", "BNSD", "BSND")
# torch_npu's sparse_mode values: 0 defaultMask, 1 allMask, 2 leftUpCausal, 3 rightDownCausal,
# 4 band, 5 prefix, 6 prefix (compressed), 7 rightDownCausal band, 8 band leftUpCausal.
SUPPORTED_SPARSE_MODES = (0, 1, 2, 3, 4)
_UNSUPPORTED_SPARSE_MODES = {
    5: "prefix (uncompressed) needs the prefix argument, which npudist does not implement",
    6: "prefix (compressed) needs the prefix argument, which npudist does not implement",
    7: "torch_npu documents it for varlen (input_layout TND) only, which npudist does not implement",
    8: "torch_npu documents it for varlen (input_layout TND) only, which npudist does not implement",
}
# Modes 2-4 take torch_npu's compressed mask: torch.triu(torch.ones(2048, 2048, dtype=torch.bool), 1).
COMPRESSED_MASK_SHAPE = (2048, 2048)


def check_args(query, key, value, head_num, input_layout, pse, padding_mask, atten_mask, keep_prob,
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
                                  f"atten_mask, scale, keep_prob, pre_tockens, next_tockens, sparse_mode 0-4)")
    if sparse_mode in _UNSUPPORTED_SPARSE_MODES:
        raise NotImplementedError(f"npu_fusion_attention: sparse_mode={sparse_mode} is not supported: "
                                  f"{_UNSUPPORTED_SPARSE_MODES[sparse_mode]}; supported are 0 (defaultMask), "
                                  f"1 (allMask), 2 (leftUpCausal), 3 (rightDownCausal), 4 (band)")
    if sparse_mode not in SUPPORTED_SPARSE_MODES:
        raise ValueError(f"npu_fusion_attention: sparse_mode={sparse_mode} is not one of torch_npu's modes 0-8")
    if atten_mask is not None and sparse_mode in (0, 4) and pre_tockens + next_tockens < 0:
        raise ValueError(f"npu_fusion_attention: sparse_mode={sparse_mode} with pre_tockens={pre_tockens} and "
                         f"next_tockens={next_tockens} leaves no key to attend to; torch_npu requires the band to "
                         f"be non-empty (pre_tockens >= -next_tockens)")
    if atten_mask is not None and sparse_mode in (2, 3, 4) and tuple(atten_mask.shape) != COMPRESSED_MASK_SHAPE:
        raise ValueError(f"npu_fusion_attention: sparse_mode={sparse_mode} takes torch_npu's compressed (2048, 2048) "
                         f"mask, torch.triu(torch.ones(2048, 2048, dtype=torch.bool), diagonal=1), got atten_mask "
                         f"of shape {tuple(atten_mask.shape)}; pass a full mask with sparse_mode=1 instead")
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


def key_len(key, layout):
    """Sequence length of key in `layout`."""
    return key.shape[0] if layout == "SBH" else key.shape[2] if layout == "BNSD" else key.shape[1]


def _bnsq(query, head_num, layout):
    if layout == "BSH":
        return query.shape[0], head_num, query.shape[1]
    if layout == "SBH":
        return query.shape[1], head_num, query.shape[0]
    if layout == "BNSD":
        return query.shape[0], query.shape[1], query.shape[2]
    return query.shape[0], query.shape[2], query.shape[1]


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


def resolve_mask(atten_mask, sparse_mode, pre_tockens, next_tockens, sq, skv, device):
    """The mask torch_npu applies for ``sparse_mode`` and the tokens (True = masked out), or None.

    As op-plugin's docs/context/torch_npu-npu_fusion_attention.md documents the modes: with
    atten_mask None nothing is masked (sparse_mode and the tokens take no effect). 0: atten_mask,
    and only keys j with -pre_tockens <= j - i <= next_tockens are computed for query i (origin
    upper-left; torch_npu asks that mask and tokens agree). 1: atten_mask as given, tokens
    ignored. 2: causal from the upper-left corner (j > i masked). 3: causal from the lower-right
    corner (j > i + Skv - Sq masked). 4: the pre/next_tockens band from the lower-right corner.
    Modes 2-4 take the compressed (2048, 2048) mask, whose content the mode implies. Returns a
    bool tensor broadcastable to (B, N, Sq, Skv); check_args has validated the arguments.
    """
    if atten_mask is None:
        return None
    if sparse_mode == 1 or (sparse_mode == 0 and pre_tockens >= sq and next_tockens >= skv):
        return atten_mask
    rel = torch.arange(skv, device=device)[None, :] - torch.arange(sq, device=device)[:, None]  # j - i
    if sparse_mode == 0:
        return atten_mask.bool() | (rel > next_tockens) | (rel < -pre_tockens)
    rel = rel if sparse_mode == 2 else rel - (skv - sq)  # 3 and 4 count from the lower-right corner
    if sparse_mode in (2, 3):
        return rel > 0
    return (rel > next_tockens) | (rel < -pre_tockens)


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


def attention(query, key, value, head_num, input_layout, atten_mask=None, scale=1.0, keep_prob=1.0,
              sparse_mode=0, seed=0):
    """softmax(mask(q @ k^T * scale)) (dropped out with keep_prob) @ v, in query's layout.

    Returns (attention_out, softmax_max, softmax_sum, softmax_out): max and sum of each softmax
    row broadcast to (B, N, Sq, 8) (torch_npu's shapes), and an empty softmax_out (torch_npu
    returns it empty too).
    """
    q, k, v = to_bnsd(query, key, value, head_num, input_layout)
    acc = acc_dtype(query.dtype)
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


def attention_grad(query, key, value, dy, head_num, input_layout, atten_mask, softmax_max, softmax_sum,
                   scale, keep_prob, sparse_mode, seed):
    """(dq, dk, dv) of :func:`attention`, recomputing the probabilities from softmax_max/softmax_sum."""
    q, k0, v0 = to_bnsd(query, key, value, head_num, input_layout)
    acc = acc_dtype(query.dtype)
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


# ------------------------------------------------------------------ kernels
def _draw_seed(device):
    # From the device's default generator, so torch.npu.manual_seed and DTensor's RNG tracker govern it.
    return int(torch.randint(0, 2 ** 31 - 1, (), device=device).item())


def _kernel_mask(query, key, head_num, input_layout, atten_mask, sparse_mode, pre_tockens, next_tockens):
    # The mode and tokens become an explicit mask, which attention() then applies as sparse_mode 1.
    sq = _bnsq(query, head_num, input_layout)[2]
    return resolve_mask(atten_mask, sparse_mode, pre_tockens, next_tockens, sq, key_len(key, input_layout),
                        query.device)


@kernel("npu_fusion_attention")
def fusion_attention(query, key, value, head_num, input_layout, pse=None, padding_mask=None, atten_mask=None,
                     scale=1.0, keep_prob=1.0, pre_tockens=INT_MAX, next_tockens=INT_MAX, inner_precise=0,
                     prefix=None, actual_seq_qlen=None, actual_seq_kvlen=None, sparse_mode=0,
                     gen_mask_parallel=True, sync=False):
    check_args(query, key, value, head_num, input_layout, pse, padding_mask, atten_mask, keep_prob,
               pre_tockens, next_tockens, prefix, actual_seq_qlen, actual_seq_kvlen, sparse_mode)
    seed = _draw_seed(query.device) if keep_prob < 1.0 else 0
    mask = _kernel_mask(query, key, head_num, input_layout, atten_mask, sparse_mode, pre_tockens, next_tockens)
    out, smax, ssum, sout = attention(query, key, value, head_num, input_layout, mask, scale, keep_prob, 1, seed)
    return out, smax, ssum, sout, seed, 0, smax.shape[0] * smax.shape[1] * smax.shape[2] * key_len(key, input_layout)


@kernel("npu_fusion_attention_grad")
def fusion_attention_grad(query, key, value, dy, head_num, input_layout, *, pse=None, padding_mask=None,
                          atten_mask=None, softmax_max=None, softmax_sum=None, softmax_in=None, attention_in=None,
                          scale_value=1.0, keep_prob=1.0, pre_tockens=INT_MAX, next_tockens=INT_MAX,
                          inner_precise=0, seed=0, offset=0, numels=0, prefix=None, actual_seq_qlen=None,
                          actual_seq_kvlen=None, sparse_mode=0, gen_mask_parallel=True, sync=False):
    check_args(query, key, value, head_num, input_layout, pse, padding_mask, atten_mask, keep_prob,
               pre_tockens, next_tockens, prefix, actual_seq_qlen, actual_seq_kvlen, sparse_mode)
    if softmax_max is None or softmax_sum is None:
        raise ValueError("npu_fusion_attention_grad: softmax_max and softmax_sum (outputs 1 and 2 of "
                         "npu_fusion_attention) are required")
    mask = _kernel_mask(query, key, head_num, input_layout, atten_mask, sparse_mode, pre_tockens, next_tockens)
    dq, dk, dv = attention_grad(query, key, value, dy, head_num, input_layout, mask, softmax_max,
                                softmax_sum, scale_value, keep_prob, 1, seed)
    return dq, dk, dv, query.new_empty(0)


# ------------------------------------------------------------------ fake kernels
@fake("npu_fusion_attention")
def _fusion_attention_fake(query, key, value, head_num, input_layout, pse=None, padding_mask=None, atten_mask=None,
                           scale=1.0, keep_prob=1.0, pre_tockens=INT_MAX, next_tockens=INT_MAX, inner_precise=0,
                           prefix=None, actual_seq_qlen=None, actual_seq_kvlen=None, sparse_mode=0,
                           gen_mask_parallel=True, sync=False):
    check_args(query, key, value, head_num, input_layout, pse, padding_mask, atten_mask, keep_prob,
               pre_tockens, next_tockens, prefix, actual_seq_qlen, actual_seq_kvlen, sparse_mode)
    b, n, sq = _bnsq(query, head_num, input_layout)
    acc = acc_dtype(query.dtype)
    stats = (b, n, sq, 8)
    return (query.new_empty(query.shape), query.new_empty(stats, dtype=acc), query.new_empty(stats, dtype=acc),
            query.new_empty(0), 0, 0, b * n * sq * key_len(key, input_layout))


@fake("npu_fusion_attention_grad")
def _fusion_attention_grad_fake(query, key, value, dy, head_num, input_layout, **kwargs):
    return query.new_empty(query.shape), key.new_empty(key.shape), value.new_empty(value.shape), query.new_empty(0)


# ------------------------------------------------------------------ autograd
_ARGS = ("query", "key", "value", "head_num", "input_layout", "pse", "padding_mask", "atten_mask", "scale",
         "keep_prob", "pre_tockens", "next_tockens", "inner_precise", "prefix", "actual_seq_qlen",
         "actual_seq_kvlen", "sparse_mode", "gen_mask_parallel", "sync")


def _setup(ctx, inputs, output):
    a = dict(zip(_ARGS, inputs))
    out, smax, ssum, sout, seed, offset, numels = output
    ctx.save_for_backward(a["query"], a["key"], a["value"], a["atten_mask"], smax, ssum, out)
    ctx.args = {k: a[k] for k in ("head_num", "input_layout", "scale", "keep_prob", "pre_tockens", "next_tockens",
                                  "inner_precise", "sparse_mode")}
    ctx.rng = (seed, offset, numels)
    ctx.mark_non_differentiable(smax, ssum, sout)


def _backward(ctx, grad_out, *unused):
    q, k, v, mask, smax, ssum, out = ctx.saved_tensors
    a = ctx.args
    seed, offset, numels = ctx.rng
    # On DTensors: the grad op's atten_mask is keyword-only and DTensor does not redistribute keyword
    # arguments, so move it to the split the forward op chose here.
    if mask is not None and _is_dtensor(mask):
        mask = mask.redistribute(mask.device_mesh, grad_mask_placements(
            mask, smax, q, a["head_num"], a["input_layout"]))
    dq, dk, dv, _ = torch.ops.npu.npu_fusion_attention_grad(
        q, k, v, grad_out, a["head_num"], a["input_layout"], atten_mask=mask, softmax_max=smax, softmax_sum=ssum,
        attention_in=out, scale_value=a["scale"], keep_prob=a["keep_prob"], pre_tockens=a["pre_tockens"],
        next_tockens=a["next_tockens"], inner_precise=a["inner_precise"], seed=seed, offset=offset, numels=numels,
        sparse_mode=a["sparse_mode"])
    return (dq, dk, dv) + (None,) * (len(_ARGS) - 3)


autograd("npu_fusion_attention", _backward, _setup)


def _is_dtensor(t):
    # without importing torch.distributed.tensor: a DTensor exists only once it is imported
    mod = sys.modules.get("torch.distributed.tensor")
    return mod is not None and isinstance(t, mod.DTensor)


# ------------------------------------------------------------------ sharding strategies
# (batch dim, head dim or None) of q/k/v/out per layout; the statistics (B, N, Sq, 8) use dims 0 and 1.
_SPLIT_DIMS = {"BSH": (0, None), "SBH": (1, None), "BNSD": (0, 1), "BSND": (0, 2)}


def _mask_placement(mask, qdim_size, stat_dim):
    """atten_mask (broadcast to (B, N, Sq, Skv), right-aligned) follows the B or N split when it has that dim."""
    from npudist.dtensor.ops._placement import R, Shard

    md = stat_dim - (4 - mask.ndim)
    if md >= 0 and mask.shape[md] == qdim_size and qdim_size > 1:
        return Shard(md)
    return R


def _splits(query, head_num, input_layout):
    """[(qkv dim, statistics dim, size)] for the splits this layout allows."""
    bdim, ndim = _SPLIT_DIMS.get(input_layout, (None, None))
    splits = []
    if bdim is not None:
        splits.append((bdim, 0, query.shape[bdim]))
    if ndim is not None:
        splits.append((ndim, 1, query.shape[ndim]))
    return splits


@sharding("npu_fusion_attention")
def fusion_attention_strategy(query, key, value, head_num, input_layout, pse=None, padding_mask=None,
                              atten_mask=None, *args, **kwargs):
    from npudist.dtensor.ops._placement import R, Shard, is_spec, replicate_all

    rest = list(args) + list(kwargs.values())
    before = [query, key, value, head_num, input_layout, pse, padding_mask, atten_mask]
    out = [([R, R, R, R, None, None, None], replicate_all(*before, *rest))]
    for qd, sd, size in _splits(query, head_num, input_layout):
        ins = [Shard(qd)] * 3 + [None, None] + replicate_all(pse, padding_mask)
        ins.append(_mask_placement(atten_mask, size, sd) if is_spec(atten_mask) else None)
        out.append(([Shard(qd), Shard(sd), Shard(sd), R, None, None, None], ins + replicate_all(*rest)))
    return out


def grad_mask_placements(mask, softmax_max, query, head_num, input_layout):
    """Placements for atten_mask that match the split the forward op chose (read from softmax_max's
    placements): the autograd formula redistributes the mask to them before calling the grad op, because
    DTensor does not redistribute keyword-only arguments."""
    from npudist.dtensor.ops._placement import R, Shard

    size_of = {sd: size for _, sd, size in _splits(query, head_num, input_layout)}
    out = []
    for p in softmax_max.placements:
        if isinstance(p, Shard) and p.dim in size_of:
            out.append(_mask_placement(mask, size_of[p.dim], p.dim))
        else:
            out.append(R)
    return out


@sharding("npu_fusion_attention_grad")
def fusion_attention_grad_strategy(query, key, value, dy, head_num, input_layout, *args, **kwargs):
    from npudist.dtensor.ops._placement import R, Shard, is_spec, replicate_all

    # Tensor kwargs: pse, padding_mask, atten_mask, softmax_max, softmax_sum, softmax_in, attention_in.
    names = list(kwargs)
    vals = [kwargs[k] for k in names]
    out = [([R, R, R, R], [R, R, R, R, None, None] + replicate_all(*args) + replicate_all(*vals))]
    for qd, sd, size in _splits(query, head_num, input_layout):
        ins = [Shard(qd)] * 4 + [None, None] + replicate_all(*args)
        for name, v in zip(names, vals):
            if not is_spec(v):
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
    kw = [(6 + len(args) + j, v.placements) for j, v in enumerate(vals) if is_spec(v)]
    keep = [(outs, ins) for outs, ins in out if all(ins[i] in current for i, current in kw)]
    return keep or out


# ------------------------------------------------------------------ FLOPs
def _schema_args(name: str, args, kwargs) -> dict:
    schema = getattr(torch.ops.npu, name).default._schema
    named = {a.name: a.default_value if a.has_default_value() else None for a in schema.arguments}
    named.update(zip((a.name for a in schema.arguments), args, strict=False))
    named.update(kwargs)
    return named


def attention_flops(q_shape, k_shape, head_num: int, layout: str, masked_causal: bool) -> int:
    """Multiply-add FLOPs x 2 of the forward's two GEMMs (q k^T and p v) that the kernel computes: 4 B N Sq
    Skv D, times (Sq+1)/(2 Sq) for causal modes (fully masked blocks are skipped, as flash attention does)."""
    if layout == "BSND":
        b, sq, n, d = q_shape
        skv = k_shape[1]
    elif layout == "BNSD":
        b, n, sq, d = q_shape
        skv = k_shape[2]
    elif layout in ("BSH", "SBH"):
        b, sq, h = q_shape if layout == "BSH" else (q_shape[1], q_shape[0], q_shape[2])
        n, d = head_num, h // max(1, head_num)
        skv = k_shape[1] if layout == "BSH" else k_shape[0]
    else:
        return 0
    full = 4 * b * n * sq * skv * d
    return full * (sq + 1) // (2 * sq) if masked_causal and sq == skv else full


def _causal(named) -> bool:
    return named.get("atten_mask") is not None and named.get("sparse_mode") in (2, 3)


def _register_flops() -> None:
    from torch.utils.flop_counter import flop_registry, register_flop_formula

    if torch.ops.npu.npu_fusion_attention in flop_registry:
        return

    @register_flop_formula(torch.ops.npu.npu_fusion_attention)
    def _fwd(*args, out_val=None, **kwargs):
        a = _schema_args("npu_fusion_attention", args, kwargs)
        return attention_flops(a["query"], a["key"], a["head_num"], a["input_layout"], _causal(a))

    # backward: dS = dO V^T, dV = P^T dO, dQ = dS K, dK = dS^T Q, and S = Q K^T recomputed: 5 GEMMs for the
    # forward's 2, i.e. 2.5 x the forward
    @register_flop_formula(torch.ops.npu.npu_fusion_attention_grad)
    def _bwd(*args, out_val=None, **kwargs):
        a = _schema_args("npu_fusion_attention_grad", args, kwargs)
        return 5 * attention_flops(a["query"], a["key"], a["head_num"], a["input_layout"], _causal(a)) // 2


_register_flops()
