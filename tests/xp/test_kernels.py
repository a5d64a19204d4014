"""xp.ElementwiseKernel / xp.ReductionKernel against CuPy's documented behaviour, checked against the
same computation with xp ufuncs/reductions (and NumPy); compile errors; the disk cache; devices;
stream order; RawKernel/RawModule."""
import os
import threading
import time

import numpy as np
import pytest
import torch

import npudist.xp as xp
from npudist import _C
from npudist.testing.multiproc import run_python
from npudist.xp._kernel import _build


@pytest.fixture(scope="module", autouse=True)
def _kernel_cache(tmp_path_factory):
    d = tmp_path_factory.mktemp("xp_kernels")
    old = os.environ.get(_build.CACHE_ENV)
    os.environ[_build.CACHE_ENV] = str(d)
    yield d
    if old is None:
        os.environ.pop(_build.CACHE_ENV, None)
    else:
        os.environ[_build.CACHE_ENV] = old


def _np(a):
    return xp.asnumpy(a)


AXPY = xp.ElementwiseKernel("T x, T y, T alpha", "T z", "z = alpha * x + y", "axpy")


# ---- ElementwiseKernel -------------------------------------------------------------------------

def test_elementwise_matches_ufuncs_with_broadcasting_and_scalars():
    x = xp.asarray(np.random.default_rng(0).random((3, 1), dtype=np.float32))
    y = xp.asarray(np.random.default_rng(1).random((4,), dtype=np.float32))
    z = AXPY(x, y, 2.5)
    assert z.shape == (3, 4) and z.dtype == np.float32 and z.device == xp.Device()
    np.testing.assert_allclose(_np(z), _np(2.5 * x + y), rtol=1e-6)
    # strided / transposed inputs (no copy) give the same values as ufuncs
    big = xp.asarray(np.arange(60, dtype=np.float32).reshape(6, 10))
    a, b = big[::2, 1::3], big.T[1:4, :3]
    assert a.shape == b.shape == (3, 3)
    np.testing.assert_allclose(_np(AXPY(a, b, -1.0)), _np(-1.0 * a + b))
    # numpy scalars convert to the placeholder's type
    assert AXPY(x, y, np.float64(0.5)).dtype == np.float32


def test_repeated_calls_reuse_the_plan_with_new_data():
    rng = np.random.default_rng(9)
    for _ in range(3):                      # same signature: the cached plan; new data and scalar
        x = xp.asarray(rng.random((5, 6), dtype=np.float32))
        y = xp.asarray(rng.random((5, 6), dtype=np.float32))
        c = float(rng.random())
        np.testing.assert_allclose(_np(AXPY(x, y, c)), c * _np(x) + _np(y), rtol=1e-6)
        out = xp.empty((5, 6), dtype=xp.float32)
        assert AXPY(x, y, c, out) is out
        np.testing.assert_allclose(_np(out), c * _np(x) + _np(y), rtol=1e-6)
    # same shape, other strides: another plan, still right
    np.testing.assert_allclose(_np(AXPY(x.T.copy().T, y, 1.0)), _np(x) + _np(y), rtol=1e-6)
    i8 = xp.ElementwiseKernel("T x, int8 c", "T y", "y = x + c", "i8")
    assert _np(i8(xp.ones(2), 127)).tolist() == [128.0, 128.0]
    with pytest.raises(OverflowError):        # checked on the cached path too
        i8(xp.ones(2), 300)


def test_reduce_dims_off_keeps_the_shape():
    k = xp.ElementwiseKernel("T x", "T y", "y = x * 2 + i", "keep_dims", reduce_dims=False)
    a = xp.asarray(np.arange(24.0).reshape(2, 3, 4))[:, ::2, 1:]
    np.testing.assert_array_equal(_np(k(a)), _np(a) * 2 + np.arange(a.size).reshape(a.shape))


def test_elementwise_loop_index_and_size():
    k = xp.ElementwiseKernel("T x", "T y", "y = x + i * 10 + _ind.size()", "with_index")
    a = xp.zeros((2, 3), dtype=xp.int64)
    assert _np(k(a)).tolist() == [[6, 16, 26], [36, 46, 56]]
    # a broadcast input: i runs over the broadcast shape in C order
    assert _np(k(xp.zeros((3, 1), dtype=xp.int64), xp.zeros((3, 2), dtype=xp.int64))).ravel().tolist() == \
        [6, 16, 26, 36, 46, 56]


def test_raw_parameters_and_size():
    rev = xp.ElementwiseKernel("raw T x", "T y", "y = x[_ind.size() - i - 1]", "reverse")
    a = xp.asarray(np.arange(12.0).reshape(3, 4))
    np.testing.assert_array_equal(_np(rev(a, size=12)), np.arange(12.0)[::-1])
    # raw x[j] is the j-th element in C order of a strided view
    np.testing.assert_array_equal(_np(rev(a.T, size=12)), _np(a).T.ravel()[::-1])
    with pytest.raises(ValueError, match="Loop size is undecided"):
        rev(a)
    # size= only when every array is raw
    with pytest.raises(ValueError, match="only if all of the ndarray are 'raw'"):
        AXPY(a, a, 1.0, size=3)
    # a raw output written by index, with an index array and shape()
    scatter = xp.ElementwiseKernel("T v, raw int64 idx", "raw T out", "out[idx[i]] = v", "scatter")
    out = xp.zeros(5)
    scatter(xp.asarray([1.0, 2.0, 3.0]), xp.asarray([4, 0, 2]), out)
    assert _np(out).tolist() == [2.0, 0.0, 3.0, 0.0, 1.0]
    with pytest.raises(ValueError, match="Output array size is Undecided"):
        scatter(xp.asarray([1.0]), xp.asarray([0]))
    nd = xp.ElementwiseKernel("raw T m", "T y",
                              "ptrdiff_t ix[2] = {i / m.shape()[1], i % m.shape()[1]}; y = m[ix] * m.ndim()", "ndidx")
    m = xp.asarray(np.arange(6.0).reshape(2, 3))
    np.testing.assert_array_equal(_np(nd(m[:, ::-1].copy(), size=6)), np.arange(6.0).reshape(2, 3)[:, ::-1].ravel() * 2)


def test_given_outputs_multiple_outputs_and_return_modes():
    k = xp.ElementwiseKernel("T x", "T s, T d", "s = x + x; d = x - 1", "two_out")
    a = xp.arange(4, dtype=xp.float64)
    s, d = k(a)
    assert _np(s).tolist() == [0, 2, 4, 6] and _np(d).tolist() == [-1, 0, 1, 2]
    s2, d2 = xp.empty(4), xp.empty(4)
    r = k(a, s2, d2)
    assert r[0] is s2 and r[1] is d2 and _np(s2).tolist() == [0, 2, 4, 6]
    # an output broadcasts the inputs up to its shape
    big = xp.empty((2, 4))
    k(a, big, xp.empty((2, 4)))
    assert _np(big).tolist() == [[0, 2, 4, 6]] * 2
    with pytest.raises(ValueError, match="Out shape is mismatched"):
        k(a, xp.empty((4, 1)), xp.empty((4, 1)))      # broadcasts to (4, 4), which the outputs are not
    with pytest.raises(ValueError, match="could not be broadcast"):
        k(a, xp.empty(3), xp.empty(3))
    with pytest.raises(TypeError, match="Type is mismatched"):
        k(a, xp.empty(4, dtype=xp.float32), xp.empty(4))
    one = xp.ElementwiseKernel("T x", "T y", "y = x", "copy_t", return_tuple=True)
    assert isinstance(one(a), tuple)
    nr = xp.ElementwiseKernel("T x", "T y", "y = x", "copy_n", no_return=True)
    assert nr(a, xp.empty(4)) is None


def test_type_rules():
    typed = xp.ElementwiseKernel("float32 x, int64 n", "float64 y", "y = x * n", "typed")
    r = typed(xp.ones(3, dtype=xp.float32), 4)
    assert r.dtype == np.float64 and _np(r).tolist() == [4.0] * 3
    with pytest.raises(TypeError, match="Type is mismatched"):
        typed(xp.ones(3, dtype=xp.float64), 4)        # no casting of arrays, as CuPy
    with pytest.raises(TypeError, match="Type is mismatched"):
        AXPY(xp.ones(2, dtype=xp.float32), xp.ones(2, dtype=xp.float64), 1.0)
    with pytest.raises(OverflowError):
        xp.ElementwiseKernel("T x, int8 c", "T y", "y = x + c", "i8")(xp.ones(2), 300)
    # an output placeholder bound only by a given output array
    conv = xp.ElementwiseKernel("T x", "U y", "y = (U)(x * 2)", "conv")
    out = xp.empty(3, dtype=xp.int32)
    conv(xp.asarray([1.5, 2.5, 3.5]), out)
    assert _np(out).tolist() == [3, 5, 7]
    with pytest.raises(TypeError, match="placeholder U"):
        conv(xp.asarray([1.5]))
    with pytest.raises(TypeError, match="unsupported type ndarray"):
        AXPY(np.ones(2, np.float32), xp.ones(2, dtype=xp.float32), 1.0)
    with pytest.raises(TypeError, match="Wrong number of arguments"):
        AXPY(xp.ones(2))


def test_bad_definitions():
    with pytest.raises(ValueError, match="Invalid kernel name"):
        xp.ElementwiseKernel("T x", "T y", "y = x", "not a name")
    with pytest.raises(ValueError, match="wrong type 'float'"):
        xp.ElementwiseKernel("float x", "T y", "y = x")
    with pytest.raises(ValueError, match="syntax error"):
        xp.ElementwiseKernel("x", "T y", "y = x")
    with pytest.raises(ValueError, match="'i'"):
        xp.ElementwiseKernel("T i", "T y", "y = i")
    with pytest.raises(ValueError, match="unknown keyword"):
        xp.ElementwiseKernel("rawr T x", "T y", "y = x")


DTYPES_FAST = ["bool", "uint64", "float16", "complex128"]
DTYPES_ALL = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float16",
              "float32", "float64", "complex64", "complex128"]
ADD = xp.ElementwiseKernel("T x, T y", "T z", "z = x + y", "add_t")


def _check_dtype(name):
    rng = np.random.default_rng(3)
    dt = np.dtype(name)
    if dt.kind == "b":
        a, b = rng.random(7) > 0.5, rng.random(7) > 0.5
        expect = a | b                       # bool + bool in C++ is 1 when either is set
    else:
        a = (rng.random(7) * 50).astype(dt) if dt.kind != "c" else (rng.random(7) + 1j * rng.random(7)).astype(dt)
        b = (rng.random(7) * 50).astype(dt) if dt.kind != "c" else (rng.random(7) - 1j).astype(dt)
        expect = a + b
    r = ADD(xp.asarray(a), xp.asarray(b))
    assert r.dtype == dt
    np.testing.assert_array_equal(_np(r), expect)


@pytest.mark.parametrize("name", DTYPES_FAST)
def test_placeholder_types(name):
    _check_dtype(name)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(set(DTYPES_ALL) - set(DTYPES_FAST)))
def test_placeholder_types_all(name):
    _check_dtype(name)


def test_preamble_math_and_loop_prep():
    k = xp.ElementwiseKernel(
        "T x", "T y", "y = sq(x) + min(x, 2) + acc",
        "pre", preamble="__device__ inline float sq(float v) { return sqrtf(v) * sqrtf(v); }",
        loop_prep="const float acc = 100;")
    a = xp.asarray([1.0, 4.0, 9.0], dtype=xp.float32)
    np.testing.assert_allclose(_np(k(a)), [102.0, 106.0, 111.0], rtol=1e-6)
    c = xp.ElementwiseKernel("T x", "T y", "y = exp(x) * conj(x)", "cplx")
    z = xp.asarray([1 + 1j, 0.5 - 2j], dtype=xp.complex64)
    np.testing.assert_allclose(_np(c(z)), np.exp(_np(z)) * np.conj(_np(z)), rtol=1e-5)


def test_compile_errors_name_the_line():
    bad = xp.ElementwiseKernel("T x", "T y", "T t = x;\ny = t +* undefined_name;", "bad_op")
    with pytest.raises(xp.CompileException) as e:
        bad(xp.ones(2))
    assert "operation:2:" in str(e.value) and "undefined_name" in str(e.value)
    assert "npudist_xp_kernel" in e.value.source
    bad_pre = xp.ElementwiseKernel("T x", "T y", "y = f(x)", "bad_pre", preamble="int ok;\nint f(int) { return }")
    with pytest.raises(xp.CompileException, match="preamble:2:"):
        bad_pre(xp.ones(2))
    bad_red = xp.ReductionKernel("T x", "T y", "x", "a +", "y = a", "0", "bad_red")
    with pytest.raises(xp.CompileException, match="reduce_expr"):
        bad_red(xp.ones(2))


def test_disk_cache_is_reused(_kernel_cache, monkeypatch):
    k = xp.ElementwiseKernel("T x", "T y", "y = x * 3", "cached")
    a = xp.ones(4, dtype=xp.float32)
    k(a)
    sos = [f for f in os.listdir(_kernel_cache) if f.endswith(".so")]
    assert sos and not [f for f in os.listdir(_kernel_cache) if f.endswith(".cpp")]
    calls = []
    monkeypatch.setattr(_build, "_compile", lambda *a: calls.append(a))
    _build.clear_memory_cache()
    k2 = xp.ElementwiseKernel("T x", "T y", "y = x * 3", "cached")      # same source -> same library
    assert _np(k2(a)).tolist() == [3.0] * 4
    assert calls == []
    # another process with the same cache directory loads the library without compiling
    code = ("import npudist.xp as xp; from npudist.xp._kernel import _build\n"
            "_build._compile = lambda *a: (_ for _ in ()).throw(AssertionError('recompiled'))\n"
            "k = xp.ElementwiseKernel('T x', 'T y', 'y = x * 3', 'cached')\n"
            "print(xp.asnumpy(k(xp.ones(4, dtype=xp.float32))).tolist())\n")
    r = run_python(["-c", code], env={_build.CACHE_ENV: str(_kernel_cache)}, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[3.0, 3.0, 3.0, 3.0]"
    assert len([f for f in os.listdir(_kernel_cache) if f.endswith(".so")]) == len(sos)


def test_kernels_follow_devices():
    a = xp.ones(3, dtype=xp.float32)
    with xp.Device(1):
        b = xp.ones(3, dtype=xp.float32)
        r = AXPY(b, b, 1.0)
        assert r.device.id == 1 and _np(r).tolist() == [2.0] * 3
        with pytest.raises(ValueError, match=r"resides \(0\) is different from the current device \(1\)"):
            AXPY(a, b, 1.0)
    with pytest.raises(ValueError, match="Peer access is unavailable"):
        AXPY(b, b, 1.0)


def test_kernel_waits_for_work_pending_on_the_current_stream():
    # work queued behind the current stream (as a collective is) completes before the kernel reads
    a = xp.zeros(1000, dtype=xp.float32)
    t = xp.to_torch(a)
    s = torch.npu.current_stream()
    started = threading.Event()

    def fill():
        started.set()
        time.sleep(0.2)
        t.fill_(7.0)
    _C._launch_host_func(s.stream_id, s.device_index, fill)
    r = AXPY(a, a, 1.0)
    assert float(_np(r).min()) == 14.0


def test_kernel_call_during_graph_capture_raises():
    a = xp.ones(4, dtype=xp.float32)
    AXPY(a, a, 1.0)
    g = torch.npu.NPUGraph()
    with pytest.raises(RuntimeError, match="cannot be captured in an npu graph"), \
            torch.npu.stream(torch.npu.Stream()), pytest.warns(UserWarning, match="empty"), torch.npu.graph(g):
        AXPY(a, a, 1.0)
    assert not torch.npu.is_current_stream_capturing()
    assert _np(AXPY(a, a, 1.0)).tolist() == [2.0] * 4


def test_torch_tensors_and_unsigned_arrays():
    t = torch.arange(5, dtype=torch.float32, device="npu")
    assert _np(AXPY(t, t, 2.0)).tolist() == [0.0, 3.0, 6.0, 9.0, 12.0]
    u = xp.asarray(np.array([2**63 + 5, 1], dtype=np.uint64))
    assert _np(ADD(u, u)).tolist() == [(2 * (2**63 + 5)) % 2**64, 2]
    with pytest.raises(TypeError, match="cpu tensor"):
        AXPY(torch.ones(2), torch.ones(2), 1.0)


def test_raw_kernel_and_module_raise():
    with pytest.raises(NotImplementedError, match="ElementwiseKernel"):
        xp.RawKernel('extern "C" __global__ void f() {}', "f")
    with pytest.raises(NotImplementedError, match="ElementwiseKernel"):
        xp.RawModule(code="")


# ---- ReductionKernel ---------------------------------------------------------------------------

L2 = xp.ReductionKernel("T x", "T y", "x * x", "a + b", "y = sqrt(a)", "0", "l2norm")
MAX = xp.ReductionKernel("T x", "T y", "x", "max(a, b)", "y = a", None, "maxr")


@pytest.mark.parametrize("axis", [None, -1, (0, 2), ()])
def test_reduction_matches_xp(axis):
    a = xp.asarray(np.random.default_rng(5).random((3, 4, 5)))
    np.testing.assert_allclose(_np(L2(a, axis=axis)), _np(xp.sqrt(xp.sum(a * a, axis=axis))), rtol=1e-12)
    np.testing.assert_array_equal(_np(MAX(a - 2, axis=axis)), _np(xp.max(a - 2, axis=axis)))
    k = L2(a, axis=axis, keepdims=True)
    assert k.shape == np.sum(_np(a), axis=axis, keepdims=True).shape


def test_reduction_of_many_float32_values_keeps_precision():
    v = np.random.default_rng(7).random(1_000_000, dtype=np.float32)
    s = xp.ReductionKernel("T x", "T y", "x", "a + b", "y = a", "0", "sum32")(xp.asarray(v))
    assert abs(float(s) - v.astype(np.float64).sum()) / v.sum() < 1e-5


def test_reduction_layouts_outputs_and_errors():
    a = xp.asarray(np.random.default_rng(6).random((6, 8)).astype(np.float32))
    for view in (a.T, a[::2, 1::3], a[:, None, :]):
        np.testing.assert_allclose(_np(L2(view, axis=0)), np.sqrt((_np(view) ** 2).sum(axis=0)), rtol=1e-5)
    full = L2(a)
    assert full.shape == () and full.dtype == np.float32
    out = xp.empty(8, dtype=xp.float32)
    assert L2(a, axis=0, out=out) is out
    with pytest.raises(ValueError, match="Out shape is mismatched"):
        L2(a, axis=1, out=out)
    with pytest.raises(ValueError, match="no identity"):
        MAX(xp.zeros((0, 3)), axis=0)
    assert _np(L2(xp.zeros((0, 3)), axis=0)).tolist() == [0.0, 0.0, 0.0]
    with pytest.raises(np.exceptions.AxisError):
        L2(a, axis=2)


def test_reduction_two_inputs_scalar_raw_and_types():
    # a weighted sum of two broadcast inputs, a typed scalar and a reduce type wider than the inputs
    wsum = xp.ReductionKernel("T x, T w, float64 scale", "float64 y", "x * w", "a + b", "y = a * scale", "0",
                              "wsum", reduce_type="double")
    x = xp.asarray(np.arange(12, dtype=np.float32).reshape(3, 4))
    w = xp.asarray(np.array([1, 2, 3, 4], dtype=np.float32))
    np.testing.assert_allclose(_np(wsum(x, w, 0.5, axis=1)), (_np(x) * _np(w)).sum(axis=1) * 0.5)
    cnt = xp.ReductionKernel("T x, raw T ref", "int64 n", "x > ref[0] ? 1 : 0", "a + b", "n = a", "0", "count_gt",
                             reduce_type="long long")
    assert int(cnt(x, xp.asarray([5.0], dtype=xp.float32))) == 6
    idx = xp.ReductionKernel("T x", "int64 y", "_in_ind.get()", "max(a, b)", "y = a + 1000 * _out_ind.get()",
                             "0", "indices", reduce_type="long long")
    assert _np(idx(x, axis=1)).tolist() == [3, 1007, 2011]


def test_kernel_size_errors_as_cupys():
    """CuPy's messages (core_tests/test_userkernel.py): 'Loop size is undecided.' first; block_size <= 0."""
    k = xp.ElementwiseKernel("raw T x", "T y", "y = x[i]", "rawcopy")
    with pytest.raises(ValueError, match=r"^Loop size is undecided\."):
        k(xp.arange(3.0))
    add = xp.ElementwiseKernel("T x, T y", "T z", "z = x + y", "add_bs")
    with pytest.raises(ValueError, match="block_size must be a positive int"):
        add(xp.arange(3.0), 1.0, block_size=0)
