"""bf16 / fp16 GEMMs and convolutions on npu accumulate in fp32 and round once: each result is
bit-equal to the fp32 op on the widened inputs, rounded to the input dtype (docs/device_api.md,
"Half precision"). Reference values are computed on cpu, in fp32. On CPUs with AVX512-BF16, bf16
GEMMs run PyTorch's native bf16 GEMM instead (fp32 accumulation, other summation order): the
bit-equality tests switch that off; the native path has its own tests at the end."""
import pytest
import torch
import torch.nn.functional as F

from npudist import _C

NPU = torch.device("npu")
HALF = [torch.bfloat16, torch.float16]


def rand(*shape, dtype=torch.bfloat16, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=g).to(dtype)


def ref(op, *tensors, dtype, **kw):
    """op on cpu fp32 copies of the tensors, rounded once to dtype."""
    return op(*[t.float() if isinstance(t, torch.Tensor) else t for t in tensors], **kw).to(dtype)


def on_npu(*ts):
    return [t.to(NPU) for t in ts]


def assert_bits(actual, expected):
    actual = actual.cpu()
    assert actual.dtype == expected.dtype and actual.shape == expected.shape, (actual.dtype, actual.shape,
                                                                                expected.dtype, expected.shape)
    assert torch.equal(actual, expected), (actual - expected).abs().max()


class widened:
    """Asserts that the npu widening kernel ran (at least `n` calls) inside the block."""

    def __init__(self, n=1):
        self.n = n

    def __enter__(self):
        self.start = _C._half_gemm_calls()

    def __exit__(self, *exc):
        if exc[0] is None:
            assert _C._half_gemm_calls() - self.start >= self.n, "the bf16/fp16 npu GEMM kernel did not run"


@pytest.fixture(autouse=True)
def _widen_bf16():
    """The bit-equality contract is the widening path's: keep bf16 GEMMs on it unless a test asks."""
    prev = _C._half_gemm_native_bf16(False)
    yield
    _C._half_gemm_native_bf16(prev)


MM_SHAPES = [(1, 1, 1), (7, 13, 5), (64, 33, 17), (129, 65, 31), (0, 5, 3), (5, 0, 3), (5, 3, 0)]


@pytest.mark.parametrize("dtype", HALF)
@pytest.mark.parametrize("m,k,n", MM_SHAPES)
def test_mm_bit_equal(dtype, m, k, n):
    a, b = rand(m, k, dtype=dtype), rand(k, n, dtype=dtype, seed=1)
    with widened():
        out = torch.mm(*on_npu(a, b))
    assert_bits(out, ref(torch.mm, a, b, dtype=dtype))


@pytest.mark.parametrize("dtype", HALF)
def test_mm_transposed_and_strided(dtype):
    a, b = rand(40, 24, dtype=dtype), rand(30, 40, dtype=dtype, seed=1)
    na, nb = on_npu(a, b)
    assert_bits(torch.mm(na.t(), nb.t()), ref(torch.mm, a.t(), b.t(), dtype=dtype))
    assert_bits(torch.mm(na[:, ::2], nb[::3, :24].t()[::2]), ref(torch.mm, a[:, ::2], b[::3, :24].t()[::2],
                                                                  dtype=dtype))


@pytest.mark.parametrize("dtype", HALF)
def test_matmul_paths(dtype):
    cases = [((2, 3, 7, 5), (5, 4)), ((7, 5), (2, 5, 4)), ((2, 1, 7, 5), (3, 5, 4)), ((4, 6, 5), (4, 5, 3)),
             ((0, 7, 5), (5, 4))]
    for sa, sb in cases:
        a, b = rand(*sa, dtype=dtype), rand(*sb, dtype=dtype, seed=1)
        with widened():
            out = torch.matmul(*on_npu(a, b))
        assert_bits(out, ref(torch.matmul, a, b, dtype=dtype))


@pytest.mark.parametrize("dtype", HALF)
def test_bmm_baddbmm_addbmm(dtype):
    a, b = rand(3, 9, 6, dtype=dtype), rand(3, 6, 11, dtype=dtype, seed=1)
    s3, s2 = rand(3, 9, 11, dtype=dtype, seed=2), rand(11, dtype=dtype, seed=3)
    na, nb, ns3, ns2 = on_npu(a, b, s3, s2)
    with widened(3):
        assert_bits(torch.bmm(na, nb), ref(torch.bmm, a, b, dtype=dtype))
        assert_bits(torch.baddbmm(ns3, na, nb, beta=0.5, alpha=2.0),
                    ref(torch.baddbmm, s3, a, b, beta=0.5, alpha=2.0, dtype=dtype))
        assert_bits(torch.addbmm(ns2, na, nb, alpha=0.25), ref(torch.addbmm, s2, a, b, alpha=0.25, dtype=dtype))
    assert_bits(torch.bmm(na[:0], nb[:0]), ref(torch.bmm, a[:0], b[:0], dtype=dtype))


@pytest.mark.parametrize("dtype", HALF)
def test_addmm_bias_out_inplace(dtype):
    a, b = rand(17, 9, dtype=dtype), rand(9, 5, dtype=dtype, seed=1)
    bias1, bias2 = rand(5, dtype=dtype, seed=2), rand(17, 5, dtype=dtype, seed=3)
    na, nb, nbias1, nbias2 = on_npu(a, b, bias1, bias2)
    assert_bits(torch.addmm(nbias1, na, nb), ref(torch.addmm, bias1, a, b, dtype=dtype))
    assert_bits(torch.addmm(nbias2, na, nb, beta=-1.5, alpha=0.5),
                ref(torch.addmm, bias2, a, b, beta=-1.5, alpha=0.5, dtype=dtype))
    out = torch.empty(0, dtype=dtype, device=NPU)  # resized as on cpu
    with widened(2):
        torch.mm(na, nb, out=out)
        assert_bits(out, ref(torch.mm, a, b, dtype=dtype))
        target = nbias2.clone()
        r = target.addmm_(na, nb, alpha=3.0)
    assert r is target
    assert_bits(target, ref(torch.addmm, bias2, a, b, alpha=3.0, dtype=dtype))


@pytest.mark.parametrize("dtype", HALF)
def test_blocked_widening(dtype):
    """A small workspace budget makes the kernel block over rows, columns and batches (blocks of
    64); the contraction is never split, so the results stay bit-equal (MKL's per-element order is
    the same for any block of at least 64 rows and columns)."""
    prev = _C._half_gemm_block_bytes(4096)
    try:
        a, b = rand(150, 70, dtype=dtype), rand(70, 190, dtype=dtype, seed=1)
        bias = rand(190, dtype=dtype, seed=2)
        na, nb, nbias = on_npu(a, b, bias)
        assert_bits(torch.mm(na, nb), ref(torch.mm, a, b, dtype=dtype))
        assert_bits(torch.addmm(nbias, na, nb), ref(torch.addmm, bias, a, b, dtype=dtype))
        ba, bb = rand(5, 140, 30, dtype=dtype), rand(5, 30, 150, dtype=dtype, seed=1)
        nba, nbb = on_npu(ba, bb)
        assert_bits(torch.bmm(nba, nbb), ref(torch.bmm, ba, bb, dtype=dtype))
        assert_bits(torch.addbmm(nbias[:150], nba, nbb), ref(torch.addbmm, bias[:150], ba, bb, dtype=dtype))
        assert_bits(torch.baddbmm(nba[:, :, :1], nba, nbb), ref(torch.baddbmm, ba[:, :, :1], ba, bb, dtype=dtype))
        _C._half_gemm_block_bytes(64 * 1024)  # two batch entries per block
        ba, bb = rand(7, 64, 32, dtype=dtype), rand(7, 32, 64, dtype=dtype, seed=1)
        nba, nbb = on_npu(ba, bb)
        assert_bits(torch.bmm(nba, nbb), ref(torch.bmm, ba, bb, dtype=dtype))
    finally:
        _C._half_gemm_block_bytes(prev)


def test_no_fp32_copy_outlives_the_kernel():
    a, b = on_npu(rand(256, 128), rand(128, 192, seed=1))
    torch.npu.synchronize()
    before = torch.npu.memory_allocated()
    torch.npu.reset_peak_memory_stats()
    out = a @ b
    assert torch.npu.memory_allocated() - before == out.untyped_storage().nbytes()
    # the fp32 workspace (widened a, b and the fp32 result) came from the npu allocator and is gone
    assert torch.npu.max_memory_allocated() - before >= 4 * (256 * 128 + 128 * 192 + 256 * 192)


def test_block_budget_bounds_the_workspace():
    prev = _C._half_gemm_block_bytes(64 * 1024)
    try:
        a, b = on_npu(rand(512, 256), rand(256, 512, seed=1))
        torch.npu.synchronize()
        before = torch.npu.memory_allocated()
        torch.npu.reset_peak_memory_stats()
        out = a @ b
        extra = torch.npu.max_memory_allocated() - before - out.untyped_storage().nbytes()
        # 64-row / 64-column panels (64 KiB each) and a 16 KiB block of the result: below one widened
        # whole operand (512 KiB); allocator rounding allowed for
        assert extra < 512 * 1024, extra
    finally:
        _C._half_gemm_block_bytes(prev)


def test_other_dtypes_and_errors_unchanged():
    a, b = torch.randn(6, 4, dtype=torch.float64), torch.randn(4, 3, dtype=torch.float64)
    start = _C._half_gemm_calls()
    assert torch.equal((a.to(NPU) @ b.to(NPU)).cpu(), a @ b)
    assert _C._half_gemm_calls() == start
    x, y = rand(6, 4), rand(4, 3).float()
    with pytest.raises(RuntimeError) as cpu_err:
        torch.mm(x, y)
    with pytest.raises(RuntimeError) as npu_err:
        torch.mm(x.to(NPU), y.to(NPU))
    assert str(npu_err.value) == str(cpu_err.value)
    with pytest.raises(RuntimeError, match="same device"):
        torch.mm(x.to(NPU), x.t())
    with pytest.raises(RuntimeError):
        torch.mm(rand(3, 4).to(NPU), rand(5, 3).to(NPU))


@pytest.mark.parametrize("dtype", HALF)
def test_linear_forward_backward(dtype):
    x = rand(2, 5, 12, dtype=dtype)
    w, bias = rand(7, 12, dtype=dtype, seed=1), rand(7, dtype=dtype, seed=2)
    go = rand(2, 5, 7, dtype=dtype, seed=3)
    nx, nw, nb = (t.to(NPU).requires_grad_() for t in (x, w, bias))
    with widened(3):
        y = F.linear(nx, nw, nb)
        y.backward(go.to(NPU))
    assert_bits(y, ref(F.linear, x, w, bias, dtype=dtype))
    x2, go2 = x.reshape(10, 12), go.reshape(10, 7)
    assert_bits(nx.grad.reshape(10, 12), ref(torch.mm, go2, w, dtype=dtype))
    assert_bits(nw.grad, ref(torch.mm, go2.t(), x2, dtype=dtype))
    assert_bits(nb.grad, go2.sum(0))  # a reduction: the cpu kernel, fp32 accumulation, as before


@pytest.mark.parametrize("dtype", HALF)
def test_autocast(dtype):
    x, w = torch.randn(9, 16), torch.randn(16, 8)
    with torch.autocast("npu", dtype=dtype), widened():
        y = torch.mm(x.to(NPU), w.to(NPU))
    assert y.dtype == dtype
    assert_bits(y, ref(torch.mm, x.to(dtype), w.to(dtype), dtype=dtype))


def test_compile():
    def f(a, b):
        return torch.mm(a, b)

    a, b = rand(33, 17), rand(17, 9, seed=1)
    compiled = torch.compile(f, backend="inductor", fullgraph=True)
    with widened():
        out = compiled(*on_npu(a, b))
    assert_bits(out, ref(torch.mm, a, b, dtype=torch.bfloat16))


def test_compile_linear_forward_backward():
    """Inductor calls the npu GEMM kernels (extern mm/addmm) forward and backward: gradients equal eager's."""
    torch.manual_seed(0)
    lin = torch.nn.Linear(24, 16).to(NPU, torch.bfloat16)
    x = rand(5, 24).to(NPU).requires_grad_()

    def loss(x):
        return F.gelu(lin(x)).sum()

    with widened(3):
        torch.compile(loss, backend="inductor")(x).backward()
    compiled = x.grad.clone(), lin.weight.grad.clone()
    x.grad = None
    lin.zero_grad()
    loss(x).backward()
    assert_bits(compiled[0], x.grad.cpu())
    assert_bits(compiled[1], lin.weight.grad.cpu())


@pytest.mark.parametrize("dtype", HALF)
def test_conv2d_forward_backward(dtype):
    x, w, bias = rand(2, 3, 9, 8, dtype=dtype), rand(4, 3, 3, 3, dtype=dtype, seed=1), rand(4, dtype=dtype, seed=2)
    nx, nw, nb = (t.to(NPU).requires_grad_() for t in (x, w, bias))
    y = F.conv2d(nx, nw, nb, stride=2, padding=1)
    xf, wf, bf = (t.float().requires_grad_() for t in (x, w, bias))
    yf = F.conv2d(xf, wf, bf, stride=2, padding=1)
    assert_bits(y, yf.to(dtype))
    go = rand(*y.shape, dtype=dtype, seed=3)
    y.backward(go.to(NPU))
    yf.backward(go.float())
    for got, want in ((nx.grad, xf.grad), (nw.grad, wf.grad), (nb.grad, bf.grad)):
        assert_bits(got, want.to(dtype))


def test_fusion_attention_accumulates_in_fp32():
    import npudist.dtensor  # noqa: F401  (defines torch.ops.npu.npu_fusion_attention)

    q, k, v = (rand(2, 6, 32, seed=s) for s in range(3))
    out = torch.ops.npu.npu_fusion_attention(*on_npu(q, k, v), 4, "BSH", scale=0.25)[0]
    out32 = torch.ops.npu.npu_fusion_attention(*on_npu(q.float(), k.float(), v.float()), 4, "BSH",
                                               scale=0.25)[0]
    assert out.dtype == torch.bfloat16
    assert_bits(out, out32.cpu().to(torch.bfloat16))


def test_switch_off_runs_the_cpu_half_kernels():
    a, b = rand(8, 8), rand(8, 8, seed=1)
    prev = _C._half_kernels_enabled(False)
    try:
        start = _C._half_gemm_calls()
        out = torch.mm(*on_npu(a, b))
        assert _C._half_gemm_calls() == start
        assert torch.equal(out.cpu(), torch.mm(a, b))
    finally:
        _C._half_kernels_enabled(prev)


def test_allow_hf32_switches():
    """torch_npu's switches exist with its defaults and keep what is set; fp32 stays full fp32."""
    assert (torch.npu.matmul.allow_hf32, torch.npu.conv.allow_hf32, torch.npu.aclnn.allow_hf32) == (False, True, True)
    a, b = torch.randn(33, 40), torch.randn(40, 7)
    try:
        torch.npu.matmul.allow_hf32 = True
        assert torch.npu.matmul.allow_hf32 is True
        assert torch.equal((a.to(NPU) @ b.to(NPU)).cpu(), a @ b)
    finally:
        torch.npu.matmul.allow_hf32 = False
    with pytest.raises(TypeError, match="must be a bool"):
        torch.npu.conv.allow_hf32 = 1
    with pytest.raises(AttributeError, match="only allow_hf32"):
        torch.npu.matmul.allow_tf32 = True


def _native_bf16_or_skip():
    _C._half_gemm_native_bf16(True)
    if not _C._half_gemm_native_bf16_available():
        pytest.skip("this CPU has no AVX512-BF16: bf16 GEMMs always widen")


@pytest.mark.parametrize("shape", [(64, 64, 64), (256, 130, 96), (3, 200, 40, 70)], ids=["mm", "mm odd", "bmm"])
def test_native_bf16_gemm_is_torchs_cpu_kernel_within_rounding_of_widening(shape):
    """With AVX512-BF16, a bf16 GEMM equals PyTorch's CPU bf16 GEMM bit for bit (it is that kernel), and
    the widened fp32 GEMM within bf16 rounding (both accumulate in fp32 and round once)."""
    _native_bf16_or_skip()
    *batch, m, k, n = shape
    a, b = rand(*batch, m, k, seed=1), rand(*batch, k, n, seed=2)
    op = torch.bmm if batch else torch.mm
    start = _C._half_gemm_calls()
    out = op(*on_npu(a, b)).cpu()
    assert _C._half_gemm_calls() == start  # not the widening kernel
    assert torch.equal(out, op(a, b))
    widened_ref = ref(op, a, b, dtype=torch.bfloat16)
    torch.testing.assert_close(out.float(), widened_ref.float(), rtol=1.6e-2, atol=1e-2)
    # addmm with beta/alpha, and a small GEMM (widens: set-up would cost more than it saves)
    c = rand(m, n, seed=3)
    if not batch:
        got = torch.addmm(*on_npu(c, a, b), beta=0.5, alpha=2.0).cpu()
        assert torch.equal(got, torch.addmm(c, a, b, beta=0.5, alpha=2.0))
    with widened():
        small = torch.mm(*on_npu(rand(8, 8), rand(8, 8, seed=4))).cpu()
    assert_bits(small, ref(torch.mm, rand(8, 8), rand(8, 8, seed=4), dtype=torch.bfloat16))


def test_native_bf16_switch_widens_again():
    _native_bf16_or_skip()
    a, b = rand(96, 96, seed=5), rand(96, 96, seed=6)
    _C._half_gemm_native_bf16(False)
    with widened():
        out = torch.mm(*on_npu(a, b)).cpu()
    assert_bits(out, ref(torch.mm, a, b, dtype=torch.bfloat16))
