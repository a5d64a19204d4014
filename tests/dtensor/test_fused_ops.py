"""torch.ops.npu fused ops against their unfused compositions: values on npu and cpu, gradients with
gradcheck in float64, fake kernels (FakeTensorMode, torch.library.opcheck), and the errors they raise."""
import math

import pytest
import torch
import torch.nn.functional as F

import npudist.dtensor  # noqa: F401  (registers the DTensor strategies of npu's fused ops)

ops = torch.ops.npu
DEVICES = ["npu", "cpu"]


def rnd(*shape, dtype=torch.float64, device="npu", seed=0):
    g = torch.Generator().manual_seed(seed + sum(shape))
    return torch.randn(*shape, generator=g, dtype=dtype).to(device)


# ---------------------------------------------------------------- unfused references
def ref_rms_norm(x, gamma, eps):
    dims = tuple(range(x.dim() - gamma.dim(), x.dim()))
    return x * torch.rsqrt(x.pow(2).mean(dims, keepdim=True) + eps) * gamma


def ref_rotate(x, mode):
    if mode == "half":
        a, b = x.chunk(2, -1)
        return torch.cat((-b, a), -1)
    out = torch.empty_like(x)
    out[..., 0::2], out[..., 1::2] = -x[..., 1::2], x[..., 0::2]
    return out


def ref_attention(q, k, v, n, layout, mask, scale, causal):
    """F.scaled_dot_product_attention on (B, N, S, D) after converting from `layout`."""
    def to4(t):
        if layout == "BNSD":
            return t
        if layout == "BSND":
            return t.transpose(1, 2)
        if layout == "SBH":
            t = t.transpose(0, 1)
        d = q.shape[-1] // n
        return t.unflatten(-1, (t.shape[-1] // d, d)).transpose(1, 2)

    q4, k4, v4 = to4(q), to4(k), to4(v)
    rep = q4.shape[1] // k4.shape[1]
    k4, v4 = k4.repeat_interleave(rep, 1), v4.repeat_interleave(rep, 1)
    attn_mask = None if mask is None else ~mask.bool()
    out = F.scaled_dot_product_attention(q4, k4, v4, attn_mask=attn_mask, scale=scale, is_causal=causal)
    if layout == "BNSD":
        return out
    if layout == "BSND":
        return out.transpose(1, 2)
    out = out.transpose(1, 2).flatten(-2)
    return out.transpose(0, 1) if layout == "SBH" else out


# ---------------------------------------------------------------- rms_norm
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("gshape", [(8,), (3, 8)])
def test_rms_norm_matches_composition(device, gshape):
    x, g = rnd(2, 3, 8, device=device), rnd(*gshape, device=device)
    y, rstd = ops.npu_rms_norm(x, g, 1e-5)
    torch.testing.assert_close(y, ref_rms_norm(x, g, 1e-5))
    assert rstd.shape == (2, 3, 1) if len(gshape) == 1 else (2, 1, 1)
    assert y.device.type == device
    assert torch.autograd.gradcheck(lambda a, b: ops.npu_rms_norm(a, b, 1e-5)[0],
                                    (x.requires_grad_(), g.requires_grad_()))


def test_rms_norm_low_precision_computes_in_float32():
    x, g = rnd(4, 16, dtype=torch.bfloat16), rnd(16, dtype=torch.bfloat16)
    y, rstd = ops.npu_rms_norm(x, g)
    assert y.dtype == torch.bfloat16 and rstd.dtype == torch.float32
    torch.testing.assert_close(y.float(), ref_rms_norm(x.float(), g.float(), 1e-6), rtol=1.6e-2, atol=1e-2)


def test_rms_norm_default_epsilon_and_bad_gamma():
    x, g = rnd(2, 8), rnd(8)
    torch.testing.assert_close(ops.npu_rms_norm(x, g)[0], ref_rms_norm(x, g, 1e-6))
    with pytest.raises(ValueError, match="gamma's shape"):
        ops.npu_rms_norm(x, rnd(7))


# ---------------------------------------------------------------- rotary_mul
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("mode", ["half", "interleave"])
def test_rotary_mul_matches_composition(device, mode):
    x, c, s = rnd(2, 4, 3, 8, device=device), rnd(1, 4, 1, 8, device=device, seed=1), rnd(1, 4, 1, 8, device=device,
                                                                                           seed=2)
    torch.testing.assert_close(ops.npu_rotary_mul(x, c, s, mode), x * c + ref_rotate(x, mode) * s)
    assert torch.autograd.gradcheck(lambda a, b, e: ops.npu_rotary_mul(a, b, e, mode),
                                    (x.requires_grad_(), c.requires_grad_(), s.requires_grad_()))


def test_rotary_mul_errors():
    x = rnd(2, 4, 3, 8)
    with pytest.raises(ValueError, match="rotary_mode"):
        ops.npu_rotary_mul(x, x, x, "full")
    with pytest.raises(ValueError, match="must broadcast"):
        ops.npu_rotary_mul(x, rnd(1, 5, 1, 8), rnd(1, 4, 1, 8))


# ---------------------------------------------------------------- swiglu
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dim", [-1, 0, 1])
def test_swiglu_matches_composition(device, dim):
    x = rnd(4, 6, 8, device=device)
    a, b = x.chunk(2, dim)
    torch.testing.assert_close(ops.npu_swiglu(x, dim=dim), F.silu(a) * b)
    assert torch.autograd.gradcheck(lambda t: ops.npu_swiglu(t, dim), (x.requires_grad_(),))


def test_swiglu_errors():
    with pytest.raises(ValueError, match="even size"):
        ops.npu_swiglu(rnd(3, 5))


# ---------------------------------------------------------------- fusion_attention
SHAPES = {"BSH": ((2, 5, 16), (2, 6, 8)), "SBH": ((5, 2, 16), (6, 2, 8)), "BNSD": ((2, 4, 5, 4), (2, 2, 6, 4)),
          "BSND": ((2, 5, 4, 4), (2, 6, 2, 4))}


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("layout", list(SHAPES))
@pytest.mark.parametrize("mode", ["none", "mask", "causal"])
def test_fusion_attention_matches_sdpa(device, layout, mode):
    qs, ks = SHAPES[layout]
    if mode == "causal":  # sparse_mode 2 (upper-left causal) with Sq == Skv equals SDPA's is_causal
        ks = tuple(5 if s == 6 else s for s in ks)
    q, k, v = rnd(*qs, device=device), rnd(*ks, device=device, seed=1), rnd(*ks, device=device, seed=2)
    sq, skv = 5, (5 if mode == "causal" else 6)
    mask = None
    if mode == "mask":
        mask = torch.rand(2, 1, sq, skv, generator=torch.Generator().manual_seed(3)) > 0.6
        mask[..., 0] = False
        mask = mask.to(device)
    scale = 1 / math.sqrt(4)
    sparse = 2 if mode == "causal" else 0
    fa_mask = COMPRESSED.to(device) if mode == "causal" else mask  # modes 2-4 take torch_npu's compressed mask
    out, smax, ssum, sout, seed, offset, numels = ops.npu_fusion_attention(
        q, k, v, 4, layout, atten_mask=fa_mask, scale=scale, sparse_mode=sparse)
    torch.testing.assert_close(out, ref_attention(q, k, v, 4, layout, mask, scale, mode == "causal"))
    assert smax.shape == ssum.shape == (2, 4, sq, 8) and sout.numel() == 0
    assert (seed, offset, numels) == (0, 0, 2 * 4 * sq * skv)
    assert torch.autograd.gradcheck(
        lambda a, b, c: ops.npu_fusion_attention(a, b, c, 4, layout, atten_mask=fa_mask, scale=scale,
                                                 sparse_mode=sparse)[0],
        (q.requires_grad_(), k.requires_grad_(), v.requires_grad_()))


# torch_npu's compressed mask for sparse_mode 2-4 (op-plugin docs/context/torch_npu-npu_fusion_attention.md)
COMPRESSED = torch.ones(2048, 2048, dtype=torch.bool).triu(1)


def documented_mask(mode, sq, skv, pre, nxt, explicit=None):
    """The mask op-plugin's documentation gives each mode (True = masked), written out element by element."""
    m = torch.zeros(sq, skv, dtype=torch.bool)
    for i in range(sq):
        for j in range(skv):
            if mode == 0:  # band around the diagonal from the upper-left corner, and the mask given
                m[i, j] = bool(explicit[i, j]) or j - i > nxt or i - j > pre
            elif mode == 1:
                m[i, j] = bool(explicit[i, j])
            elif mode == 2:  # causal, upper-left
                m[i, j] = j > i
            elif mode == 3:  # causal, lower-right
                m[i, j] = j > i + (skv - sq)
            else:  # 4: band from the lower-right corner
                d = j - i - (skv - sq)
                m[i, j] = d > nxt or d < -pre
    return m


@pytest.mark.parametrize("sq,skv", [(6, 6), (5, 8), (8, 5)])
@pytest.mark.parametrize("mode,pre,nxt", [(0, 2, 1), (0, 65536, 0), (0, 3, -1), (1, 1, 1), (2, 65536, 0),
                                          (3, 65536, 0), (4, 2, 1), (4, 1, 0), (4, 4, -2)])
def test_fusion_attention_sparse_modes_as_documented(mode, pre, nxt, sq, skv):
    q, k, v = rnd(2, 4, sq, 8, device="cpu"), rnd(2, 2, skv, 8, device="cpu", seed=1), rnd(2, 2, skv, 8, device="cpu", seed=2)
    explicit = torch.rand(sq, skv, generator=torch.Generator().manual_seed(3)) > 0.8
    expected = documented_mask(mode, sq, skv, pre, nxt, explicit)
    if bool(expected.all(-1).any()):
        pytest.skip("a fully masked row: torch_npu leaves its output undefined")
    given = COMPRESSED if mode in (2, 3, 4) else explicit
    out = ops.npu_fusion_attention(q.npu(), k.npu(), v.npu(), 4, "BNSD", atten_mask=given.npu(), scale=0.3,
                                   pre_tockens=pre, next_tockens=nxt, sparse_mode=mode)[0]
    torch.testing.assert_close(out.cpu(), ref_attention(q, k, v, 4, "BNSD", expected, 0.3, False))


@pytest.mark.parametrize("mode", [0, 1, 2, 3, 4])
def test_fusion_attention_without_a_mask_computes_everything(mode):
    # torch_npu: with atten_mask None, sparse_mode, pre_tockens and next_tockens take no effect.
    q, k, v = rnd(1, 5, 16), rnd(1, 7, 16, seed=1), rnd(1, 7, 16, seed=2)
    out = ops.npu_fusion_attention(q, k, v, 2, "BSH", scale=0.25, pre_tockens=1, next_tockens=0, sparse_mode=mode)[0]
    torch.testing.assert_close(out, ref_attention(q, k, v, 2, "BSH", None, 0.25, False))


def test_fusion_attention_band_mask_with_tokens_and_its_gradient():
    # sparse_mode 0 with an explicit band mask and pre/next_tockens that agree with it (the documented
    # pairing), forward and backward against SDPA with that mask.
    s = 12
    band = torch.ones(s, s, dtype=torch.bool).triu(3 + 1) | torch.ones(s, s, dtype=torch.bool).tril(-3 - 1)
    q, k, v = rnd(1, 2, s, 4), rnd(1, 2, s, 4, seed=1), rnd(1, 2, s, 4, seed=2)
    assert torch.autograd.gradcheck(
        lambda a, b, c: ops.npu_fusion_attention(a, b, c, 2, "BNSD", atten_mask=band.npu(), scale=0.5,
                                                 pre_tockens=3, next_tockens=3, sparse_mode=0)[0],
        (q.requires_grad_(), k.requires_grad_(), v.requires_grad_()))
    out = ops.npu_fusion_attention(q, k, v, 2, "BNSD", atten_mask=band.npu(), scale=0.5, pre_tockens=3,
                                   next_tockens=3, sparse_mode=0)[0]
    torch.testing.assert_close(out, ref_attention(q, k, v, 2, "BNSD", band.npu(), 0.5, False))


def test_fusion_attention_lower_right_causal():
    q, k, v = rnd(1, 3, 8), rnd(1, 5, 8, seed=1), rnd(1, 5, 8, seed=2)
    mask = torch.ones(3, 5, dtype=torch.bool).triu(5 - 3 + 1).npu()
    a = ops.npu_fusion_attention(q, k, v, 2, "BSH", atten_mask=COMPRESSED.npu(), scale=0.5, sparse_mode=3)[0]
    b = ops.npu_fusion_attention(q, k, v, 2, "BSH", atten_mask=mask, scale=0.5)[0]
    torch.testing.assert_close(a, b)


def test_fusion_attention_dropout_is_seeded_and_differentiable():
    q, k, v = (rnd(2, 6, 8, dtype=torch.float32, seed=i).requires_grad_() for i in range(3))
    torch.npu.manual_seed(7)
    out1, *_rest = ops.npu_fusion_attention(q, k, v, 2, "BSH", keep_prob=0.5)
    seed1 = _rest[3]
    torch.npu.manual_seed(7)
    out2, *_rest2 = ops.npu_fusion_attention(q, k, v, 2, "BSH", keep_prob=0.5)
    assert seed1 == _rest2[3] and torch.equal(out1, out2)
    full = ops.npu_fusion_attention(q, k, v, 2, "BSH")[0]
    assert not torch.allclose(out1, full)
    out1.sum().backward()  # gradient regenerates the same dropout mask from the seed
    assert q.grad is not None and torch.isfinite(q.grad).all()
    q64, k64, v64 = (t.detach().double().requires_grad_() for t in (q, k, v))
    torch.npu.manual_seed(3)
    fixed_seed_fn = lambda a, b, c: ops.npu_fusion_attention(a, b, c, 2, "BSH", keep_prob=0.7)[0]  # noqa: E731  (a local one-line callable)
    gen_state = torch.npu.get_rng_state()

    def seeded(a, b, c):  # the same mask on every call gradcheck makes
        torch.npu.set_rng_state(gen_state)
        return fixed_seed_fn(a, b, c)

    assert torch.autograd.gradcheck(seeded, (q64, k64, v64))


@pytest.mark.parametrize("kwargs,match", [
    (dict(pse=torch.zeros(1)), "pse"),
    (dict(padding_mask=torch.zeros(1)), "padding_mask"),
    (dict(prefix=[1]), "prefix"),
    (dict(actual_seq_qlen=[4]), "actual_seq_qlen"),
    (dict(sparse_mode=5), "sparse_mode=5 is not supported: prefix"),
    (dict(sparse_mode=6), "sparse_mode=6 is not supported: prefix"),
    (dict(sparse_mode=7), "sparse_mode=7 is not supported: .*varlen"),
    (dict(sparse_mode=8), "sparse_mode=8 is not supported: .*varlen"),
    (dict(sparse_mode=9), "sparse_mode=9 is not one of torch_npu's modes"),
    (dict(sparse_mode=2, atten_mask=torch.ones(4, 4, dtype=torch.bool).triu(1)), "sparse_mode=2 takes .*2048"),
    (dict(sparse_mode=4, atten_mask=torch.ones(4, 4, dtype=torch.bool)), "sparse_mode=4 takes .*2048"),
    (dict(atten_mask=torch.zeros(4, 4, dtype=torch.bool), pre_tockens=-3, next_tockens=1), "no key to attend to"),
    (dict(keep_prob=1.5), "keep_prob"),
], ids=lambda v: v if isinstance(v, str) else None)
def test_fusion_attention_unsupported_arguments_raise(kwargs, match):
    q = rnd(1, 4, 8)
    kwargs = {k: (v.npu() if isinstance(v, torch.Tensor) else v) for k, v in kwargs.items()}
    with pytest.raises((NotImplementedError, ValueError), match=match):
        ops.npu_fusion_attention(q, q, q, 2, "BSH", **kwargs)


def test_fusion_attention_bad_layout_and_shapes():
    q = rnd(1, 4, 8)
    with pytest.raises(NotImplementedError, match="input_layout 'TND'"):
        ops.npu_fusion_attention(q, q, q, 2, "TND")
    with pytest.raises(ValueError, match="must be 4-D"):
        ops.npu_fusion_attention(q, q, q, 2, "BNSD")
    with pytest.raises(ValueError, match="not divisible by head_num"):
        ops.npu_fusion_attention(q, q, q, 3, "BSH")
    with pytest.raises(ValueError, match="bool or uint8"):
        ops.npu_fusion_attention(q, q, q, 2, "BSH", atten_mask=torch.zeros(4, 4, device="npu"))


# ---------------------------------------------------------------- fake kernels, opcheck
def _samples(device):
    x, g = rnd(2, 3, 8, device=device, dtype=torch.float32), rnd(8, device=device, dtype=torch.float32)
    c, s = rnd(1, 3, 1, 8, device=device, dtype=torch.float32), rnd(1, 3, 1, 8, device=device, dtype=torch.float32)
    q, k = rnd(2, 5, 16, device=device, dtype=torch.float32), rnd(2, 6, 8, device=device, dtype=torch.float32)
    return [
        (ops.npu_rms_norm.default, (x, g, 1e-6), {}),
        (ops.npu_rotary_mul.default, (x.unsqueeze(2).expand(2, 3, 1, 8).contiguous(), c, s, "half"), {}),
        (ops.npu_swiglu.default, (x, -1), {}),
        (ops.npu_fusion_attention.default, (q, k, k.clone(), 4, "BSH"), dict(scale=0.5, sparse_mode=0)),
    ]


@pytest.mark.parametrize("device", DEVICES)
def test_opcheck(device):
    """torch.library.opcheck: schema, autograd registration, fake tensor kernel, AOT dispatch."""
    for op, args, kwargs in _samples(device):
        args = tuple(a.requires_grad_() if isinstance(a, torch.Tensor) and a.is_floating_point() else a for a in args)
        # torch 2.13's autograd-registration check only knows CPU/CUDA/XPU ("NYI devices other than ..."):
        # on npu the same registration is exercised by the gradcheck tests above.
        utils = ("test_schema", "test_faketensor") + (("test_autograd_registration",) if device == "cpu" else ())
        torch.library.opcheck(op, args, kwargs, test_utils=utils)


def test_fake_tensor_mode_shapes_forward_and_backward():
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode():
        x = torch.empty(2, 3, 8, device="npu", requires_grad=True)
        y, rstd = ops.npu_rms_norm(x, torch.empty(8, device="npu"))
        assert y.shape == x.shape and rstd.shape == (2, 3, 1) and rstd.dtype == torch.float32
        assert ops.npu_swiglu(x, -1).shape == (2, 3, 4)
        q = torch.empty(5, 2, 16, device="npu", requires_grad=True)
        out, smax, *_ = ops.npu_fusion_attention(q, q, q, 4, "SBH", sparse_mode=2)
        assert out.shape == q.shape and smax.shape == (2, 4, 5, 8)
        out.sum().backward()
        assert q.grad.shape == q.shape
        y.sum().backward()
        assert x.grad.shape == x.shape


def test_registered_with_torch_npu_schemas():
    from npudist.dtensor.ops import SCHEMAS

    for name, schema in SCHEMAS.items():
        assert getattr(ops, name).default._schema == torch._C.parse_schema("npu::" + schema)
    assert "nondeterministic_seeded" in str(ops.npu_fusion_attention.default.tags)
