"""scaled_dot_product_attention on npu: the kernel choice follows CUDA's rules, and npu's
memory-efficient attention equals the math path (forward and backward) within the tolerances
PyTorch's own SDPA tests use (error against a float64 reference no larger than a small multiple
of the math path's own error in the same dtype)."""
import math

import pytest
import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.utils._python_dispatch import TorchDispatchMode

EFFICIENT = SDPBackend.EFFICIENT_ATTENTION
MATH = SDPBackend.MATH
FLASH = SDPBackend.FLASH_ATTENTION


def _qkv(b, hq, hkv, lq, lk, d, dv=None, dtype=torch.float32, device="npu", grad=False, seed=0):
    g = torch.Generator().manual_seed(seed)
    dv = d if dv is None else dv
    ts = [torch.randn(b, h, n, e, generator=g) for h, n, e in ((hq, lq, d), (hkv, lk, d), (hkv, lk, dv))]
    return [t.to(device=device, dtype=dtype).requires_grad_(grad) for t in ts]


def _choice(q, k, v, mask=None, dropout=0.0, causal=False, gqa=False):
    return SDPBackend(torch._fused_sdp_choice(q, k, v, mask, dropout, causal, scale=None, enable_gqa=gqa))


# The table below is CUDA's decision on an sm80 GPU (aten/src/ATen/native/transformers/cuda/sdp_utils.cpp,
# torch 2.13), written out by hand, and what npu runs for it: flash or efficient on CUDA -> efficient on
# npu (npu has no separate flash kernel), math on CUDA -> math on npu.
# (case, dtype, (b, hq, hkv, lq, lk, d, dv), mask, dropout, causal, gqa, enabled backends, CUDA's choice)
B16, F32, F64 = torch.bfloat16, torch.float32, torch.float64
ALL = (FLASH, EFFICIENT, MATH)
CHOICE_TABLE = [
    ("bf16 plain -> flash", B16, (2, 4, 4, 16, 16, 64, 64), None, 0.0, False, False, ALL, FLASH),
    ("bf16 causal + dropout -> flash", B16, (2, 4, 4, 16, 16, 64, 64), None, 0.1, True, False, ALL, FLASH),
    ("fp32 -> efficient (flash is fp16/bf16 only)", F32, (2, 4, 4, 16, 16, 64, 64), None, 0.0, False, False, ALL,
     EFFICIENT),
    ("fp32 with mask -> efficient", F32, (2, 4, 4, 16, 24, 64, 64), "float", 0.0, False, False, ALL, EFFICIENT),
    ("bf16 with bool mask -> efficient (flash takes no mask)", B16, (2, 4, 4, 16, 16, 64, 64), "bool", 0.0, False,
     False, ALL, EFFICIENT),
    ("fp64 -> math", F64, (2, 4, 4, 16, 16, 64, 64), None, 0.0, False, False, ALL, MATH),
    ("fp32 head dim 6 (not a multiple of 4) -> math", F32, (2, 4, 4, 16, 16, 6, 6), None, 0.0, False, False, ALL,
     MATH),
    ("bf16 head dim 6 -> flash (pads to 8)", B16, (2, 4, 4, 16, 16, 6, 6), None, 0.0, False, False, ALL, FLASH),
    ("bf16 head dim 6 with mask -> math", B16, (2, 4, 4, 16, 16, 6, 6), "float", 0.0, False, False, ALL, MATH),
    ("bf16 head dim 264 -> efficient (flash takes <= 256)", B16, (1, 2, 2, 8, 8, 264, 264), None, 0.0, False, False,
     ALL, EFFICIENT),
    ("bf16 head dim 260 -> math (over flash's 256, not a multiple of 8)", B16, (1, 2, 2, 8, 8, 260, 260), None, 0.0,
     False, False, ALL, MATH),
    ("bf16 causal, lq != lk -> efficient (flash refuses non-square causal)", B16, (2, 4, 4, 16, 32, 64, 64), None,
     0.0, True, False, ALL, EFFICIENT),
    ("bf16 GQA 8/2 -> flash", B16, (2, 8, 2, 16, 16, 64, 64), None, 0.0, False, True, ALL, FLASH),
    ("fp32 GQA 8/2 -> math (efficient needs equal heads)", F32, (2, 8, 2, 16, 16, 64, 64), None, 0.0, False, True,
     ALL, MATH),
    ("fp32 dv != d -> efficient", F32, (2, 4, 4, 16, 16, 64, 32), None, 0.0, False, False, ALL, EFFICIENT),
    ("bf16 dv != d -> efficient (flash needs equal dims)", B16, (2, 4, 4, 16, 16, 64, 32), None, 0.0, False, False,
     ALL, EFFICIENT),
    ("sdpa_kernel(MATH) -> math", B16, (2, 4, 4, 16, 16, 64, 64), None, 0.0, False, False, (MATH,), MATH),
    ("sdpa_kernel(FLASH) bf16 -> flash", B16, (2, 4, 4, 16, 16, 64, 64), None, 0.0, False, False, (FLASH,), FLASH),
    ("sdpa_kernel(EFFICIENT) fp32 -> efficient", F32, (2, 4, 4, 16, 16, 64, 64), None, 0.0, True, False,
     (EFFICIENT,), EFFICIENT),
    ("sdpa_kernel(FLASH, MATH) fp32 -> math", F32, (2, 4, 4, 16, 16, 64, 64), None, 0.0, False, False,
     (FLASH, MATH), MATH),
    ("3-D inputs -> math", F32, (None, 4, 4, 16, 16, 64, 64), None, 0.0, False, False, ALL, MATH),
    ("zero-length sequence -> math", F32, (2, 4, 4, 0, 16, 64, 64), None, 0.0, False, False, ALL, MATH),
]
NPU_RUNS = {FLASH: EFFICIENT, EFFICIENT: EFFICIENT, MATH: MATH}


def _case_inputs(dtype, shape, mask):
    b, hq, hkv, lq, lk, d, dv = shape
    q, k, v = _qkv(b or 1, hq, hkv, lq, lk, d, dv, dtype=dtype)
    if b is None:
        q, k, v = q[0], k[0], v[0]
    m = None
    if mask == "float":
        m = torch.randn(lq, lk).to("npu", dtype)
    elif mask == "bool":
        m = (torch.rand(lq, lk) > 0.3).npu()
    return q, k, v, m


@pytest.mark.parametrize("case", CHOICE_TABLE, ids=[c[0] for c in CHOICE_TABLE])
def test_kernel_choice_follows_cuda_rules(case):
    name, dtype, shape, mask, dropout, causal, gqa, enabled, cuda = case
    q, k, v, m = _case_inputs(dtype, shape, mask)
    with sdpa_kernel(list(enabled)):
        assert _choice(q, k, v, m, dropout, causal, gqa) == NPU_RUNS[cuda]


def test_no_kernel_available_raises_with_reasons():
    q, k, v = _qkv(2, 4, 4, 16, 16, 64, dtype=torch.float64)
    with sdpa_kernel([EFFICIENT]), pytest.warns(UserWarning, match="dtype"), \
            pytest.raises(RuntimeError, match="No available kernel"):
        F.scaled_dot_product_attention(q, k, v)


def test_disabling_through_torch_backends_cuda_is_honoured():
    q, k, v = _qkv(2, 4, 4, 16, 16, 64)
    torch.backends.cuda.enable_mem_efficient_sdp(False)
    try:
        assert _choice(q, k, v) == MATH
    finally:
        torch.backends.cuda.enable_mem_efficient_sdp(True)
    assert _choice(q, k, v) == EFFICIENT


class _Ops(TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.names = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.names.append(func.name())
        return func(*args, **(kwargs or {}))


def test_sdpa_runs_the_efficient_op_forward_and_backward():
    q, k, v = _qkv(2, 4, 4, 40, 40, 64, grad=True)
    with _Ops() as ops:
        F.scaled_dot_product_attention(q, k, v, is_causal=True).sum().backward()
    assert "aten::_scaled_dot_product_efficient_attention" in ops.names
    assert "aten::_scaled_dot_product_efficient_attention_backward" in ops.names
    assert not any("softmax" in n for n in ops.names), ops.names


def _sdpa(q, k, v, backend, **kw):
    with sdpa_kernel([backend]):
        return F.scaled_dot_product_attention(q, k, v, **kw)


def _max_err(got, ref):
    return (got.double() - ref).abs().max().item()


def _compare(shape, dtype, mask=None, causal=False, scale=None, gqa=False, seed=0):
    """Efficient vs math, both in `dtype`, each against math in float64 (PyTorch's test_transformers
    approach): forward output and the gradients of q, k, v (and of a float mask)."""
    b, hq, hkv, lq, lk, d, dv = shape
    q, k, v = _qkv(b, hq, hkv, lq, lk, d, dv, dtype=dtype, grad=True, seed=seed)
    g = torch.Generator().manual_seed(seed + 1)
    grad_out = torch.randn(b, hq, lq, dv, generator=g)
    m = None
    if mask == "float":
        m = torch.randn(b, 1, lq, lk, generator=g).to("npu", dtype).requires_grad_(True)
    elif mask == "bool":
        m = (torch.rand(lq, lk, generator=g) > 0.2).npu()
    kw = dict(attn_mask=m, is_causal=causal, scale=scale, enable_gqa=gqa)

    def run(backend, cast):
        ins = [t.detach().to(cast).requires_grad_(True) for t in (q, k, v)]
        mm = m.detach().to(cast).requires_grad_(True) if m is not None and m.is_floating_point() else m
        out = _sdpa(*ins, backend, **{**kw, "attn_mask": mm})
        out.backward(grad_out.to(out.device, out.dtype))
        grads = [t.grad for t in ins] + ([mm.grad] if mm is not None and mm.is_floating_point() else [])
        return [out] + grads

    ref = [t.cpu().double() for t in run(MATH, torch.float64)]
    # GQA is a flash case by CUDA's rules (efficient needs equal heads); on npu both run the efficient kernel.
    eff = run(FLASH if gqa else EFFICIENT, dtype)
    mth = run(MATH, dtype)
    names = ["out", "grad_q", "grad_k", "grad_v", "grad_mask"]
    for name, e, mt, r in zip(names, eff, mth, ref):
        assert e.dtype == dtype and e.device.type == "npu"
        err, math_err = _max_err(e.cpu(), r), _max_err(mt.cpu(), r)
        # fp32: both errors are rounding noise; half precision: the fused kernel rounds once, so it
        # is usually closer than math, and never more than a few times its error.
        bound = 4 * math_err + (1e-5 if dtype == torch.float32 else 1e-3) * max(1.0, r.abs().max().item())
        assert err <= bound, f"{name}: efficient error {err:.3g} vs math error {math_err:.3g} (bound {bound:.3g})"


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["fp32", "bf16"])
@pytest.mark.parametrize(
    "shape,mask,causal,scale",
    [
        ((2, 3, 3, 200, 200, 64, 64), None, False, None),
        ((2, 3, 3, 300, 300, 64, 64), None, True, None),
        ((1, 2, 2, 130, 290, 128, 128), "float", False, 0.3),
        ((1, 2, 2, 150, 70, 32, 64), "bool", False, None),
        ((1, 2, 2, 270, 300, 64, 64), None, True, None),  # top-left causal with lq != lk
        ((1, 1, 1, 1100, 1100, 32, 32), None, True, None),  # long sequences: 256 x 512 blocks
        ((1, 1, 1, 1030, 1100, 32, 32), "float", False, None),
    ],
    ids=["plain", "causal", "float-mask+scale", "bool-mask, dv!=d", "causal lq<lk", "long causal", "long mask"],
)
def test_efficient_matches_math_forward_and_backward(dtype, shape, mask, causal, scale):
    _compare(shape, dtype, mask=mask, causal=causal, scale=scale)


@pytest.fixture(params=[True, False], ids=["native-bf16", "widening"])
def bf16_path(request):
    """Runs a bf16 test on the native AVX512-BF16 kernels and on the widening ones (csrc/core/aten/attention_bf16.h)."""
    import npudist

    if request.param and not npudist._C._bf16_attention_native_available():
        pytest.skip("this CPU has no AVX512-BF16: bf16 attention always widens")
    prev = npudist._C._bf16_attention_native(request.param)
    yield request.param
    npudist._C._bf16_attention_native(prev)


@pytest.mark.parametrize(
    "shape,mask,causal",
    [
        ((2, 3, 3, 300, 300, 64, 64), None, True),
        ((1, 2, 2, 129, 257, 64, 32), "bool", False),  # odd lengths, dv != d, -inf bias without a gradient
        ((1, 1, 1, 1030, 1100, 128, 128), None, True),  # 256 x 512 blocks, tails
        ((1, 2, 2, 70, 90, 32, 32), "float", False),  # bias gradient: the native kernel defers to widening
    ],
    ids=["causal", "bool-mask odd", "long causal", "float-mask"],
)
def test_bf16_native_and_widening_kernels_match_math(bf16_path, shape, mask, causal):
    _compare(shape, torch.bfloat16, mask=mask, causal=causal)


def test_bf16_native_grouped_query_attention(bf16_path):
    _compare((1, 6, 2, 200, 200, 64, 64), torch.bfloat16, causal=True, gqa=True)


def test_bf16_native_and_widening_agree():
    """The two bf16 paths differ only by where bf16 rounding happens (within bf16 rounding of each other)."""
    import npudist

    if not npudist._C._bf16_attention_native_available():
        pytest.skip("this CPU has no AVX512-BF16: bf16 attention always widens")
    q, k, v = _qkv(2, 4, 4, 333, 333, 64, dtype=torch.bfloat16, grad=True, seed=3)
    g = torch.randn(2, 4, 333, 64).to("npu", torch.bfloat16)
    outs = []
    for native in (True, False):
        prev = npudist._C._bf16_attention_native(native)
        try:
            ins = [t.detach().requires_grad_(True) for t in (q, k, v)]
            out = _sdpa(*ins, EFFICIENT, is_causal=True)
            out.backward(g)
            outs.append([out.detach().float().cpu()] + [t.grad.float().cpu() for t in ins])
        finally:
            npudist._C._bf16_attention_native(prev)
    for a, b in zip(*outs):
        torch.testing.assert_close(a, b, rtol=2e-2, atol=2e-2 * b.abs().max().item())


def test_grouped_query_attention_matches_math():
    _compare((2, 8, 2, 100, 100, 64, 64), torch.bfloat16, causal=True, gqa=True)
    q, k, v = _qkv(1, 8, 2, 10, 10, 16, grad=True)
    with torch.no_grad():  # the op takes grouped heads directly as well
        out = torch.ops.aten._scaled_dot_product_efficient_attention(q, k, v, None, False)[0]
        want = _sdpa(q, k, v, MATH, enable_gqa=True)
    torch.testing.assert_close(out.cpu(), want.cpu())


def test_output_layout_and_logsumexp_follow_the_op_contract():
    q, k, v = _qkv(2, 3, 3, 40, 50, 64, 32)
    out, lse, seed, offset = torch.ops.aten._scaled_dot_product_efficient_attention(q, k, v, None, True)
    meta = torch.ops.aten._scaled_dot_product_efficient_attention(*(t.to("meta") for t in (q, k, v)), None, True)
    assert out.shape == meta[0].shape and out.stride() == meta[0].stride()
    assert lse.shape == meta[1].shape == (2, 3, 64) and lse.dtype == torch.float32
    assert seed.shape == offset.shape == () and seed.dtype == torch.long
    s = (q.cpu().double() @ k.cpu().double().transpose(-1, -2)) / math.sqrt(64)
    torch.testing.assert_close(lse[..., :40].cpu().double(), torch.logsumexp(s, -1), rtol=1e-5, atol=1e-5)
    _, lse0, _, _ = torch.ops.aten._scaled_dot_product_efficient_attention(q, k, v, None, False)
    assert lse0.shape == (2, 3, 0)


def test_fully_masked_rows_give_zero_output_and_gradients():
    q, k, v = _qkv(1, 1, 1, 4, 6, 8, grad=True)
    mask = torch.ones(4, 6, dtype=torch.bool)
    mask[1] = False
    out = _sdpa(q, k, v, EFFICIENT, attn_mask=mask.npu())
    out.sum().backward()
    assert torch.equal(out[0, 0, 1].cpu(), torch.zeros(8))
    assert torch.isfinite(q.grad.cpu()).all() and torch.equal(q.grad[0, 0, 1].cpu(), torch.zeros(8))
    ref = _sdpa(*(t.detach() for t in (q, k, v)), MATH, attn_mask=mask.npu())
    torch.testing.assert_close(out.detach().cpu(), ref.cpu())


def _dropout_mask(p, lq, lk, seed):
    """The keep mask npu's kernel draws at manual_seed(seed), read back exactly: with q = k = 0 every
    probability is 1/lk, and v = identity makes output[i, j] = keep[i, j] / (lk * (1 - p))."""
    q = torch.zeros(1, 2, lq, 16, device="npu")
    k = torch.zeros(1, 2, lk, 16, device="npu")
    v = torch.eye(lk).expand(1, 2, lk, lk).contiguous().npu()
    torch.npu.manual_seed(seed)
    out = _sdpa(q, k, v, EFFICIENT, dropout_p=p)
    return (out.cpu() * lk * (1 - p)).round().bool()


def test_dropout_is_reproducible_under_manual_seed_and_matches_math_with_its_mask():
    p, lq, lk = 0.3, 64, 64
    mask = _dropout_mask(p, lq, lk, seed=5)
    assert torch.equal(mask, _dropout_mask(p, lq, lk, seed=5))
    assert not torch.equal(mask, _dropout_mask(p, lq, lk, seed=6))
    assert abs(mask.float().mean().item() - (1 - p)) < 0.03

    # The mask depends on (seed, offset, b, h, i, j) only: real q, k, v of the same (B, H, L, S) at the
    # same seed draw it again, and forward and backward equal the math path given that mask.
    q, k, v = _qkv(1, 2, 2, lq, lk, 16, dv=32, grad=True)
    torch.npu.manual_seed(5)
    got = _sdpa(q, k, v, EFFICIENT, dropout_p=p)
    got.sum().backward()
    qm, km, vm = (t.detach().cpu().double().requires_grad_(True) for t in (q, k, v))
    want = torch.ops.aten._scaled_dot_product_attention_math(qm, km, vm, None, p, False, dropout_mask=mask)[0]
    want.sum().backward()
    torch.testing.assert_close(got.detach().cpu().double(), want.detach(), rtol=1e-5, atol=1e-5)
    for a, b in ((q, qm), (k, km), (v, vm)):
        torch.testing.assert_close(a.grad.cpu().double(), b.grad, rtol=1e-4, atol=1e-5)


def test_dropout_advances_the_npu_generator():
    q, k, v = _qkv(1, 2, 2, 32, 32, 16)
    torch.npu.manual_seed(1)
    before = torch.npu.get_rng_state()[8:].view(torch.int64).item()
    a = _sdpa(q, k, v, EFFICIENT, dropout_p=0.5)
    after = torch.npu.get_rng_state()[8:].view(torch.int64).item()
    assert after >= before + 2 * 32 * 32
    b = _sdpa(q, k, v, EFFICIENT, dropout_p=0.5)
    assert not torch.equal(a.cpu(), b.cpu())  # a fresh mask each call


def test_torch_compile_of_a_model_with_sdpa():
    class Block(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.qkv = torch.nn.Linear(64, 192)

        def forward(self, x):
            q, k, v = self.qkv(x).view(2, 16, 3, 4, 16).permute(2, 0, 3, 1, 4)
            return F.scaled_dot_product_attention(q, k, v, is_causal=True).sum()

    torch.manual_seed(0)
    model = Block().npu()
    x = torch.randn(2, 16, 64).npu()
    want = model(x)
    want.backward()
    want_grad = model.qkv.weight.grad.clone()
    model.qkv.weight.grad = None
    torch._dynamo.reset()
    got = torch.compile(model)(x)
    got.backward()
    torch.testing.assert_close(got.cpu(), want.cpu(), rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(model.qkv.weight.grad.cpu(), want_grad.cpu(), rtol=1e-5, atol=1e-5)


def test_npu_graph_capture_replays_forward_and_backward():
    q, k, v = _qkv(1, 2, 2, 48, 48, 16, grad=True)
    grad_out = torch.randn(1, 2, 48, 16).npu()

    def run():
        out = _sdpa(q, k, v, EFFICIENT, is_causal=True)
        out.backward(grad_out)
        return out

    s = torch.npu.Stream()
    s.wait_stream(torch.npu.current_stream())
    with torch.npu.stream(s):
        run()
    torch.npu.current_stream().wait_stream(s)
    g = torch.npu.NPUGraph()
    with torch.npu.graph(g):
        out = run()
    new = [torch.randn(1, 2, 48, 16) for _ in range(3)]
    with torch.no_grad():
        for t, n in zip((q, k, v), new):
            t.copy_(n.npu())
            t.grad.zero_()
    g.replay()
    ref = [n.clone().requires_grad_(True) for n in new]
    want = _sdpa(*ref, MATH, is_causal=True)
    want.backward(grad_out.cpu())
    torch.testing.assert_close(out.detach().cpu(), want.detach(), rtol=1e-5, atol=1e-5)
    for t, r in zip((q, k, v), ref):
        torch.testing.assert_close(t.grad.cpu(), r.grad, rtol=1e-5, atol=1e-5)


def test_npu_graph_capture_with_dropout_raises():
    q, k, v = _qkv(1, 2, 2, 16, 16, 16)
    g = torch.npu.NPUGraph()
    with pytest.raises(RuntimeError, match="dropout_p > 0 on npu \\(not capturable yet"), torch.npu.graph(g):
        _sdpa(q, k, v, EFFICIENT, dropout_p=0.5)
