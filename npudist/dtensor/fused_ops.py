"""Registers torch_npu's fused ops under torch.ops.npu (torch.library).

After ``import npudist.dtensor`` these exist with torch_npu's names and
schemas, so code written for torch_npu calls them unchanged::

    y, rstd = torch.ops.npu.npu_rms_norm(x, gamma, epsilon=1e-6)
    out = torch.ops.npu.npu_rotary_mul(x, cos, sin)                 # rotary_mode="half" | "interleave"
    out = torch.ops.npu.npu_swiglu(x, dim=-1)
    out, smax, ssum, sout, seed, offset, numels = torch.ops.npu.npu_fusion_attention(
        q, k, v, head_num, "BSH", atten_mask=mask, scale=d ** -0.5, keep_prob=1.0, sparse_mode=0)

Each forward op has its torch_npu backward op (npu_rms_norm_backward,
npu_rotary_mul_backward, npu_swiglu_backward, npu_fusion_attention_grad),
an autograd formula calling it (torch.library.register_autograd), a fake
kernel (torch.library.register_fake: FakeTensorMode, torch.compile's
tracing) and a DTensor sharding strategy (npudist.dtensor.strategies).
Kernels (npudist.dtensor._fused_impl) compose ordinary torch ops and are
registered for npu (PrivateUse1) and cpu.

Non-differentiable outputs, as in torch_npu: npu_rms_norm's rstd, and
npu_fusion_attention's softmax_max / softmax_sum / softmax_out and the ints.
npu_fusion_attention raises NotImplementedError for pse, padding_mask,
prefix, actual_seq_qlen/kvlen, band masks (pre/next_tockens) and sparse_mode
4-8 (see docs/dtensor.md).
"""
from __future__ import annotations

import torch

from npudist.dtensor import _fused_impl as impl

_INT_MAX = impl.INT_MAX

SCHEMAS = {
    "npu_rms_norm": "npu_rms_norm(Tensor self, Tensor gamma, float epsilon=1e-06) -> (Tensor, Tensor)",
    "npu_rms_norm_backward": "npu_rms_norm_backward(Tensor dy, Tensor self, Tensor gamma, Tensor rstd) "
                             "-> (Tensor, Tensor)",
    "npu_rotary_mul": "npu_rotary_mul(Tensor self, Tensor r1, Tensor r2, str rotary_mode='half') -> Tensor",
    "npu_rotary_mul_backward": "npu_rotary_mul_backward(Tensor grad, Tensor self, Tensor r1, Tensor r2, "
                               "str rotary_mode='half') -> (Tensor, Tensor, Tensor)",
    "npu_swiglu": "npu_swiglu(Tensor self, int dim=-1) -> Tensor",
    "npu_swiglu_backward": "npu_swiglu_backward(Tensor grad_output, Tensor self, int dim=-1) -> Tensor",
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

# FRAGMENT: another library (a real torch_npu build, a C++ extension) may own the "npu" namespace too.
_lib = torch.library.Library("npu", "FRAGMENT")


def _define():
    existing = {name for name in SCHEMAS if hasattr(torch.ops.npu, name)}
    if existing:
        raise RuntimeError(f"torch.ops.npu already defines {sorted(existing)} (is torch_npu installed in this "
                           f"environment?); npudist's fused ops cannot be registered next to them")
    for name, schema in SCHEMAS.items():
        tags = (torch.Tag.nondeterministic_seeded,) if name == "npu_fusion_attention" else ()
        _lib.define(schema, tags=tags)


_define()


def _impl(name):
    def deco(fn):
        for key in ("CPU", "PrivateUse1"):
            _lib.impl(name, fn, key)
        return fn
    return deco


# ------------------------------------------------------------------ kernels
@_impl("npu_rms_norm")
def _rms_norm(x, gamma, epsilon=1e-6):
    return impl.rms_norm(x, gamma, epsilon)


@_impl("npu_rms_norm_backward")
def _rms_norm_backward(dy, x, gamma, rstd):
    return impl.rms_norm_backward(dy, x, gamma, rstd)


@_impl("npu_rotary_mul")
def _rotary_mul(x, r1, r2, rotary_mode="half"):
    return impl.rotary_mul(x, r1, r2, rotary_mode)


@_impl("npu_rotary_mul_backward")
def _rotary_mul_backward(grad, x, r1, r2, rotary_mode="half"):
    return impl.rotary_mul_backward(grad, x, r1, r2, rotary_mode)


@_impl("npu_swiglu")
def _swiglu(x, dim=-1):
    return impl.swiglu(x, dim)


@_impl("npu_swiglu_backward")
def _swiglu_backward(grad_output, x, dim=-1):
    return impl.swiglu_backward(grad_output, x, dim)


def _draw_seed(device):
    # From the device's default generator, so torch.npu.manual_seed and DTensor's RNG tracker govern it.
    return int(torch.randint(0, 2 ** 31 - 1, (), device=device).item())


@_impl("npu_fusion_attention")
def _fusion_attention(query, key, value, head_num, input_layout, pse=None, padding_mask=None, atten_mask=None,
                      scale=1.0, keep_prob=1.0, pre_tockens=_INT_MAX, next_tockens=_INT_MAX, inner_precise=0,
                      prefix=None, actual_seq_qlen=None, actual_seq_kvlen=None, sparse_mode=0,
                      gen_mask_parallel=True, sync=False):
    impl.check_attention_args(query, key, value, head_num, input_layout, pse, padding_mask, atten_mask, keep_prob,
                              pre_tockens, next_tockens, prefix, actual_seq_qlen, actual_seq_kvlen, sparse_mode)
    seed = _draw_seed(query.device) if keep_prob < 1.0 else 0
    out, smax, ssum, sout = impl.fusion_attention(query, key, value, head_num, input_layout, atten_mask, scale,
                                                  keep_prob, sparse_mode, seed)
    return out, smax, ssum, sout, seed, 0, smax.shape[0] * smax.shape[1] * smax.shape[2] * key_len(key, input_layout)


def key_len(key, layout):
    """Sequence length of key in `layout`."""
    return key.shape[0] if layout == "SBH" else key.shape[2] if layout == "BNSD" else key.shape[1]


@_impl("npu_fusion_attention_grad")
def _fusion_attention_grad(query, key, value, dy, head_num, input_layout, *, pse=None, padding_mask=None,
                           atten_mask=None, softmax_max=None, softmax_sum=None, softmax_in=None, attention_in=None,
                           scale_value=1.0, keep_prob=1.0, pre_tockens=_INT_MAX, next_tockens=_INT_MAX,
                           inner_precise=0, seed=0, offset=0, numels=0, prefix=None, actual_seq_qlen=None,
                           actual_seq_kvlen=None, sparse_mode=0, gen_mask_parallel=True, sync=False):
    impl.check_attention_args(query, key, value, head_num, input_layout, pse, padding_mask, atten_mask, keep_prob,
                              pre_tockens, next_tockens, prefix, actual_seq_qlen, actual_seq_kvlen, sparse_mode)
    if softmax_max is None or softmax_sum is None:
        raise ValueError("npu_fusion_attention_grad: softmax_max and softmax_sum (outputs 1 and 2 of "
                         "npu_fusion_attention) are required")
    dq, dk, dv = impl.fusion_attention_grad(query, key, value, dy, head_num, input_layout, atten_mask, softmax_max,
                                            softmax_sum, scale_value, keep_prob, sparse_mode, seed)
    return dq, dk, dv, query.new_empty(0)


# ------------------------------------------------------------------ fake (meta) kernels
def _fake(name):
    return torch.library.register_fake(f"npu::{name}", lib=_lib)


@_fake("npu_rms_norm")
def _rms_norm_fake(x, gamma, epsilon=1e-6):
    impl._norm_dims(x, gamma)
    acc = impl._acc(x.dtype)
    return x.new_empty(x.shape), x.new_empty((*x.shape[:x.dim() - gamma.dim()], *([1] * gamma.dim())), dtype=acc)


@_fake("npu_rms_norm_backward")
def _rms_norm_backward_fake(dy, x, gamma, rstd):
    return x.new_empty(x.shape), gamma.new_empty(gamma.shape)


@_fake("npu_rotary_mul")
def _rotary_mul_fake(x, r1, r2, rotary_mode="half"):
    impl._check_rotary(x, r1, r2, rotary_mode)
    return x.new_empty(x.shape)


@_fake("npu_rotary_mul_backward")
def _rotary_mul_backward_fake(grad, x, r1, r2, rotary_mode="half"):
    return x.new_empty(x.shape), r1.new_empty(r1.shape), r2.new_empty(r2.shape)


@_fake("npu_swiglu")
def _swiglu_fake(x, dim=-1):
    impl._check_swiglu(x, dim)
    shape = list(x.shape)
    shape[dim] //= 2
    return x.new_empty(shape)


@_fake("npu_swiglu_backward")
def _swiglu_backward_fake(grad_output, x, dim=-1):
    return x.new_empty(x.shape)


def _bnsq(query, head_num, layout):
    if layout == "BSH":
        return query.shape[0], head_num, query.shape[1]
    if layout == "SBH":
        return query.shape[1], head_num, query.shape[0]
    if layout == "BNSD":
        return query.shape[0], query.shape[1], query.shape[2]
    return query.shape[0], query.shape[2], query.shape[1]


@_fake("npu_fusion_attention")
def _fusion_attention_fake(query, key, value, head_num, input_layout, pse=None, padding_mask=None, atten_mask=None,
                           scale=1.0, keep_prob=1.0, pre_tockens=_INT_MAX, next_tockens=_INT_MAX, inner_precise=0,
                           prefix=None, actual_seq_qlen=None, actual_seq_kvlen=None, sparse_mode=0,
                           gen_mask_parallel=True, sync=False):
    impl.check_attention_args(query, key, value, head_num, input_layout, pse, padding_mask, atten_mask, keep_prob,
                              pre_tockens, next_tockens, prefix, actual_seq_qlen, actual_seq_kvlen, sparse_mode)
    b, n, sq = _bnsq(query, head_num, input_layout)
    acc = impl._acc(query.dtype)
    stats = (b, n, sq, 8)
    return (query.new_empty(query.shape), query.new_empty(stats, dtype=acc), query.new_empty(stats, dtype=acc),
            query.new_empty(0), 0, 0, b * n * sq * key_len(key, input_layout))


@_fake("npu_fusion_attention_grad")
def _fusion_attention_grad_fake(query, key, value, dy, head_num, input_layout, **kwargs):
    return query.new_empty(query.shape), key.new_empty(key.shape), value.new_empty(value.shape), query.new_empty(0)


# ------------------------------------------------------------------ autograd formulas
def _rms_norm_setup(ctx, inputs, output):
    x, gamma, _ = inputs
    ctx.save_for_backward(x, gamma, output[1])
    ctx.mark_non_differentiable(output[1])


def _rms_norm_bwd(ctx, grad_y, grad_rstd):
    x, gamma, rstd = ctx.saved_tensors
    dx, dgamma = torch.ops.npu.npu_rms_norm_backward(grad_y, x, gamma, rstd)
    return dx, dgamma, None


torch.library.register_autograd("npu::npu_rms_norm", _rms_norm_bwd, setup_context=_rms_norm_setup, lib=_lib)


def _rotary_setup(ctx, inputs, output):
    x, r1, r2, mode = inputs
    ctx.save_for_backward(x, r1, r2)
    ctx.mode = mode


def _rotary_bwd(ctx, grad):
    x, r1, r2 = ctx.saved_tensors
    dx, dr1, dr2 = torch.ops.npu.npu_rotary_mul_backward(grad, x, r1, r2, ctx.mode)
    return dx, dr1, dr2, None


torch.library.register_autograd("npu::npu_rotary_mul", _rotary_bwd, setup_context=_rotary_setup, lib=_lib)


def _swiglu_setup(ctx, inputs, output):
    x, dim = inputs
    ctx.save_for_backward(x)
    ctx.dim = dim


def _swiglu_bwd(ctx, grad):
    (x,) = ctx.saved_tensors
    return torch.ops.npu.npu_swiglu_backward(grad, x, ctx.dim), None


torch.library.register_autograd("npu::npu_swiglu", _swiglu_bwd, setup_context=_swiglu_setup, lib=_lib)

_FA_ARGS = ("query", "key", "value", "head_num", "input_layout", "pse", "padding_mask", "atten_mask", "scale",
            "keep_prob", "pre_tockens", "next_tockens", "inner_precise", "prefix", "actual_seq_qlen",
            "actual_seq_kvlen", "sparse_mode", "gen_mask_parallel", "sync")


def _is_dtensor(t):
    from torch.distributed.tensor import DTensor

    return isinstance(t, DTensor)


def _fa_setup(ctx, inputs, output):
    a = dict(zip(_FA_ARGS, inputs))
    out, smax, ssum, sout, seed, offset, numels = output
    ctx.save_for_backward(a["query"], a["key"], a["value"], a["atten_mask"], smax, ssum, out)
    ctx.args = {k: a[k] for k in ("head_num", "input_layout", "scale", "keep_prob", "pre_tockens", "next_tockens",
                                  "inner_precise", "sparse_mode")}
    ctx.rng = (seed, offset, numels)
    ctx.mark_non_differentiable(smax, ssum, sout)


def _fa_bwd(ctx, grad_out, *unused):
    q, k, v, mask, smax, ssum, out = ctx.saved_tensors
    a = ctx.args
    seed, offset, numels = ctx.rng
    if mask is not None and _is_dtensor(mask):
        from npudist.dtensor.strategies import attention_grad_mask_placements

        mask = mask.redistribute(mask.device_mesh, attention_grad_mask_placements(
            mask, smax, q, a["head_num"], a["input_layout"]))
    dq, dk, dv, _ = torch.ops.npu.npu_fusion_attention_grad(
        q, k, v, grad_out, a["head_num"], a["input_layout"], atten_mask=mask, softmax_max=smax, softmax_sum=ssum,
        attention_in=out, scale_value=a["scale"], keep_prob=a["keep_prob"], pre_tockens=a["pre_tockens"],
        next_tockens=a["next_tockens"], inner_precise=a["inner_precise"], seed=seed, offset=offset, numels=numels,
        sparse_mode=a["sparse_mode"])
    return (dq, dk, dv) + (None,) * (len(_FA_ARGS) - 3)


torch.library.register_autograd("npu::npu_fusion_attention", _fa_bwd, setup_context=_fa_setup, lib=_lib)

FORWARD_OPS = ("npu_rms_norm", "npu_rotary_mul", "npu_swiglu", "npu_fusion_attention")
ALL_OPS = tuple(SCHEMAS)
