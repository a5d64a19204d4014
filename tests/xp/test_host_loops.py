"""xp ufuncs computed by NumPy's loops on zero-copy views of npu memory (npudist.xp._host): results
equal NumPy's exactly (dtype, values, NaN, overflow, casting, out=), the memory stays npu memory
allocated by the npu caching allocator, pending stream work completes first, graph capture takes
the PyTorch path, and calls that do not qualify still give xp's results and errors."""
import gc
import threading
import warnings

import numpy as np
import pytest
import torch

import npudist.xp as xp
from npudist import _C
from npudist.xp import _host

from ._host_data import DTYPES, fill_later, sample


def _data(dt, seed=0, n=16):
    return sample(dt, seed, n, zeros=False)


@pytest.fixture
def force_host(monkeypatch):
    """Every qualifying small call takes the host path (the measured choice keeps some on
    PyTorch; exactness is checked for all of them here)."""
    from npudist.xp._ufunc import ufunc
    monkeypatch.setattr(ufunc, "_host_worth", lambda self, args: True)
    monkeypatch.setattr(_host, "host_small", lambda name, loop: True)


def _host_made(r):
    """The result came from a NumPy-loop path: the Python one sets its cached view when allocating,
    the C fast path leaves the cache empty, ``()``, to be built when needed."""
    h = getattr(r, "_h", None)
    return h == () or (h is not None and h[0] is r._t)


def _same(r, expected):
    got = xp.asnumpy(r)
    assert got.dtype == expected.dtype, (got.dtype, expected.dtype)
    np.testing.assert_array_equal(got, expected)


BINARY = ["add", "subtract", "multiply", "divide", "floor_divide", "remainder", "maximum", "minimum", "fmax",
          "equal", "less", "greater_equal", "logical_and", "bitwise_xor", "arctan2", "power", "copysign"]
UNARY = ["negative", "absolute", "sqrt", "exp", "sin", "floor", "isnan", "sign", "square", "invert",
         "logical_not", "reciprocal"]


def _numpy_result(name, *args):
    with np.errstate(all="ignore"):
        try:
            return getattr(np, name)(*args)
        except (TypeError, ValueError, OverflowError) as e:
            return e


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("name", BINARY)
def test_binary_every_dtype_matches_numpy(name, dt, force_host):
    a, b = _data(dt), _data(dt, seed=1)
    if name == "power" and np.dtype(dt).kind in "iu":
        b = np.abs(b.astype(np.int64) % 5).astype(dt)  # negative integer powers raise (checked below)
    expected = _numpy_result(name, a, b)
    if isinstance(expected, Exception):
        with pytest.raises(type(expected)):
            getattr(xp, name)(xp.asarray(a), xp.asarray(b))
        return
    with warnings.catch_warnings():
        warnings.simplefilter("error")    # xp never warns (NumPy would, without errstate)
        r = getattr(xp, name)(xp.asarray(a), xp.asarray(b))
    assert _host_made(r)
    assert r._t.device.type == "npu"
    _same(r, expected)


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("name", UNARY)
def test_unary_every_dtype_matches_numpy(name, dt, force_host):
    if (name, dt) == ("sign", "bool"):
        # NumPy's call casts bool to int8 for sign; xp resolves loops with ufunc.resolve_dtypes, which
        # has no bool loop, so xp raises TypeError on either path (a known gap of xp's dtype table)
        with pytest.raises(TypeError, match="not defined"):
            xp.sign(xp.asarray(_data(dt)))
        return
    a = _data(dt)
    expected = _numpy_result(name, a)
    if isinstance(expected, Exception):
        with pytest.raises(type(expected)):
            getattr(xp, name)(xp.asarray(a))
        return
    r = getattr(xp, name)(xp.asarray(a))
    assert _host_made(r)
    _same(r, expected)


@pytest.mark.parametrize("dt", ["int8", "uint8", "uint64", "float16", "float32", "complex64"])
def test_python_scalars_are_weak_as_numpy(dt, force_host):
    a = _data(dt)
    for s in (3, 2.5, True, -1):
        expected = _numpy_result("multiply", a, s)
        if isinstance(expected, Exception):
            with pytest.raises(type(expected)):
                xp.asarray(a) * s
            continue
        r = xp.asarray(a) * s
        _same(r, expected)
        _same(s + xp.asarray(a), _numpy_result("add", s, a))


def test_out_of_range_python_int():
    with pytest.raises(OverflowError):
        xp.add(xp.asarray(np.arange(4, dtype=np.int8)), 300)
    # comparisons with an out-of-range int are defined (NumPy 2)
    _same(xp.asarray(np.arange(4, dtype=np.uint8)) < 300, np.arange(4, dtype=np.uint8) < 300)
    _same(xp.asarray(np.arange(4, dtype=np.uint8)) > -1, np.arange(4, dtype=np.uint8) > -1)


def test_numpy_raise_errstate_of_the_user_is_not_applied(force_host):
    a = xp.asarray(np.array([1.0, 0.0], dtype=np.float32))
    with np.errstate(all="raise"):
        r = a / 0.0
    _same(r, np.array([np.inf, np.nan], dtype=np.float32))
    _same(xp.asarray(np.array([7, 3], dtype=np.int32)) // xp.asarray(np.array([0, 2], dtype=np.int32)),
          np.array([0, 1], dtype=np.int32))


def test_broadcasting_and_mixed_dtypes(force_host):
    a = np.arange(4, dtype=np.int16).reshape(4, 1)
    b = np.linspace(0, 1, 5, dtype=np.float32)
    r = xp.add(xp.asarray(a), xp.asarray(b))
    assert _host_made(r)
    _same(r, a + b)
    z = np.array(5, dtype=np.uint32)
    _same(xp.asarray(z) * xp.asarray(np.arange(3, dtype=np.int8)), z * np.arange(3, dtype=np.int8))
    _same(xp.asarray(z) + 1, z + 1)   # 0-d


def test_out_argument(force_host):
    a, b = _data("int32"), _data("int32", seed=1)
    o = xp.empty(16, dtype=xp.int64)
    r = xp.add(xp.asarray(a), xp.asarray(b), out=o)
    assert r is o
    _same(o, (a + b).astype(np.int64))
    o2 = xp.empty(16, dtype=xp.int64)
    assert xp.multiply(xp.asarray(a), 2, out=(o2,)) is o2
    _same(o2, (a * 2).astype(np.int64))
    # same_kind refuses float -> int, as NumPy
    with pytest.raises(TypeError):
        xp.add(xp.asarray(a), 1.5, out=xp.empty(16, dtype=xp.int32))
    xp.add(xp.asarray(a), 1.5, out=xp.empty(16, dtype=xp.int32), casting="unsafe")
    # out aliasing an input; out broadcasting
    x = xp.asarray(a.copy())
    xp.add(x, x, out=x)
    _same(x, a + a)
    o3 = xp.zeros((2, 16), dtype=xp.int32)
    xp.add(xp.asarray(a), 1, out=o3)
    _same(o3, np.broadcast_to(a + 1, (2, 16)))
    # where= with out keeps out's other elements
    o4 = xp.full(4, -1, dtype=xp.float64)
    xp.sqrt(xp.asarray([4.0, 9.0, 16.0, 25.0]), out=o4, where=xp.asarray([True, False, True, False]))
    _same(o4, np.array([2.0, -1.0, 4.0, -1.0]))


def test_two_outputs(force_host):
    a = _data("float64")
    fr, ip = xp.modf(xp.asarray(a))
    efr, eip = np.modf(a)
    _same(fr, efr)
    _same(ip, eip)
    q, r = xp.divmod(xp.asarray(_data("int16")), 7)
    eq, er = np.divmod(_data("int16"), 7)
    _same(q, eq)
    _same(r, er)


def test_result_is_npu_memory_from_the_caching_allocator(force_host):
    a = xp.ones(1000, dtype=xp.float64)
    gc.collect()                 # earlier tests' garbage must not be freed inside the measurement
    torch.npu.synchronize()      # nor their stream-deferred frees
    before = torch.npu.memory_allocated()
    r = a + a
    assert _host_made(r)
    assert torch.npu.memory_allocated() - before >= 8000
    assert _C._device_of_ptr(r.data.ptr) == 0
    del r
    assert torch.npu.memory_allocated() == before


def test_views_follow_the_array(force_host):
    a = xp.asarray(np.arange(6, dtype=np.float32))
    _same(a + 1, np.arange(6, dtype=np.float32) + 1)
    a.shape = (2, 3)                    # a new tensor: the cached view is not reused
    _same(a + 1, np.arange(6, dtype=np.float32).reshape(2, 3) + 1)
    a[0, 0] = 100                       # writes through torch are seen
    assert float(xp.asnumpy(a + 1)[0, 0]) == 101
    t = xp.to_torch(a)
    t.mul_(2)
    assert float(xp.asnumpy(a + 0)[0, 0]) == 200


def test_noncontiguous_takes_the_torch_path_with_the_same_result(force_host):
    base = np.arange(32, dtype=np.float32).reshape(4, 8)
    a = xp.asarray(base)[:, ::2]
    r = a * 2
    assert not _host_made(r)
    _same(r, base[:, ::2] * 2)


def test_waits_for_work_pending_on_the_current_stream(force_host):
    a = xp.zeros(16, dtype=xp.float32)
    fill_later(a, 7.0)
    r = a + 1
    assert _host_made(r)
    assert xp.asnumpy(r).tolist() == [8.0] * 16


def test_pending_work_writing_the_output_completes_first(force_host):
    o = xp.zeros(16, dtype=xp.float32)
    fill_later(o, -5.0)
    xp.add(xp.ones(16, dtype=xp.float32), 1, out=o)
    assert xp.asnumpy(o).tolist() == [2.0] * 16   # the pending fill ran before, not after


def test_graph_capture_takes_the_torch_path_and_replays(force_host):
    a = xp.ones(16, dtype=xp.float32)
    b = xp.ones(16, dtype=xp.float32)
    a + b  # warm-up outside capture
    g = torch.npu.NPUGraph()
    with torch.npu.stream(torch.npu.Stream()), torch.npu.graph(g):
        r = xp.add(a, b)
    assert not _host_made(r)
    xp.to_torch(a).fill_(5.0)
    g.replay()
    torch.npu.synchronize()
    assert xp.asnumpy(r).tolist() == [6.0] * 16


def test_large_arrays_choose_per_op(monkeypatch):
    n = _host.SMALL * 4
    a = xp.asarray(np.arange(n, dtype=np.uint32))
    r = a * 3                                    # unsigned: NumPy's exact loop at any size
    assert _host_made(r)
    _same(r, np.arange(n, dtype=np.uint32) * 3)
    f = xp.asarray(np.linspace(0, 1, n))
    threads = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        assert _host_made(f + f)                 # NumPy's loop is the faster one per thread
        assert not _host_made(xp.sin(f))         # PyTorch's float64 sin is
        assert _host_made(xp.exp(f))             # NumPy's SIMD exp is (_host.NUMPY_FASTER_FOR)
        torch.set_num_threads(2)
        assert not _host_made(f + f)
    finally:
        torch.set_num_threads(threads)
    np.testing.assert_allclose(xp.asnumpy(xp.exp(f)), np.exp(np.linspace(0, 1, n)), rtol=1e-15)


def test_errors_stay_xp_errors(force_host):
    with pytest.raises(TypeError, match="xp.bitwise_and is not defined"):
        xp.bitwise_and(xp.ones(3), xp.ones(3))
    with pytest.raises(ValueError, match="negative integer powers"):
        xp.power(xp.asarray(np.arange(3)), -1)


def test_other_threads_see_consistent_results(force_host):
    a = xp.asarray(np.arange(16, dtype=np.int64))
    errors = []

    def work():
        for _ in range(200):
            if xp.asnumpy(a * 2 + 1).tolist() != list(range(1, 32, 2)):
                errors.append(1)
    ts = [threading.Thread(target=work) for _ in range(3)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(60)
    assert not errors


def test_measured_choice_on_small_arrays():
    f = xp.asarray(np.arange(1, 17, dtype=np.float32))
    i = xp.asarray(np.arange(1, 17, dtype=np.int64))
    u = xp.asarray(np.arange(1, 17, dtype=np.uint32))
    c = xp.asarray(np.arange(16, dtype=np.complex64))
    assert _host_made(f + f)                      # the C fast path: every small call of the same shape
    assert _host_made(i > 3)
    _host.FAST = False                            # the Python host path alone: single-kernel calls stay
    try:                                          # on PyTorch (as fast as that path's Python allocation)
        assert not _host_made(f + f)
        assert not _host_made(i > 3)
        assert _host_made(i // 3)
    finally:
        _host.FAST = True
    assert _host_made(i // 3)                     # several torch ops on the PyTorch path
    assert _host_made(i % 3)
    assert _host_made(u + u)                      # unsigned: exact NumPy loop
    assert _host_made(u / u)                      # an unsigned operand, float64 loop
    assert _host_made(c < c)                      # lexicographic complex order
    _same(i // 3, np.arange(1, 17) // 3)
    _same(u / u, np.ones(16))
    _host.ENABLED = False
    try:
        assert not _host_made(u + u)
        _same(u + u, np.arange(1, 17, dtype=np.uint32) * 2)
    finally:
        _host.ENABLED = True
