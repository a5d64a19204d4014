"""xp's C fast paths (csrc/xp/host_ufunc.cpp; npudist.xp._host.fast_ufunc and numpy_first):
one C call runs NumPy's own ufunc or function on zero-copy views of npu memory. Results equal
NumPy's exactly (dtype, values, NaN/inf, integer wraparound, division by zero), results are npu
memory from the npu caching allocator, and every call that does not qualify (broadcasting, out=,
where=, dtype=, subclasses, non-contiguous operands, float64 modes, graph capture, host loops off)
takes the general path with the same result."""
import gc

import numpy as np
import pytest
import torch

import npudist.xp as xp
from npudist import _C
from npudist.xp import _core, _host

from ._host_data import DTYPES, fill_later, sample

pytestmark = pytest.mark.skipif(not hasattr(_C, "_XpHostUfunc"), reason="extension built without xp's fast path")


def _data(dt, seed=0, n=16):
    return sample(dt, seed, n, zeros=True)


def _expected(fn, *args, **kw):
    with np.errstate(all="ignore"):
        try:
            return fn(*args, **kw)
        except (TypeError, ValueError, OverflowError, IndexError) as e:
            return e


def _same(r, expected):
    if isinstance(expected, tuple):
        assert isinstance(r, tuple) and len(r) == len(expected)
        for a, b in zip(r, expected):
            _same(a, b)
        return
    assert type(r) is xp.ndarray
    assert r._t.device.type == "npu"
    got = xp.asnumpy(r)
    expected = np.asarray(expected)
    assert got.dtype == expected.dtype, (got.dtype, expected.dtype)
    assert got.shape == expected.shape
    np.testing.assert_array_equal(got, expected)


UFUNCS = ["add", "subtract", "multiply", "divide", "floor_divide", "remainder", "power", "maximum", "fmin",
          "equal", "less", "logical_or", "bitwise_and", "left_shift", "arctan2", "negative", "absolute", "sqrt",
          "exp", "sin", "floor", "isnan", "sign", "invert", "reciprocal", "square", "divmod", "modf"]


@pytest.mark.parametrize("dt", DTYPES)
def test_ufuncs_every_dtype_match_numpy_in_one_c_call(dt):
    a, b = _data(dt), _data(dt, seed=1)
    if np.dtype(dt).kind in "iu":
        b = np.abs(b) % 7 if np.dtype(dt).kind == "u" else (np.abs(b.astype(np.int64)) % 7).astype(dt)
    xa, xb = xp.asarray(a), xp.asarray(b)
    for name in UFUNCS:
        uf = getattr(xp, name)
        args = (a, b)[:uf.nin]
        exp = _expected(getattr(np, name), *args)
        fast = uf._fast(*(xa, xb)[:uf.nin])
        if isinstance(exp, Exception):
            assert fast is None, name          # NumPy refuses: declined, xp raises its own error
            continue
        assert fast is not None, name
        _same(fast, exp)
        _same(uf(*(xa, xb)[:uf.nin]), exp)     # through __call__ (the hook in front)


@pytest.mark.parametrize("dt", ["int8", "uint8", "int32", "uint64", "float16", "float32", "complex128"])
@pytest.mark.parametrize("scalar", [3, -2, 2.5, True, 1j, 300])
def test_python_scalars_are_numpys_weak_scalars(dt, scalar):
    a = _data(dt)
    for name in ("add", "multiply", "greater", "maximum"):
        exp = _expected(getattr(np, name), a, scalar)
        r = _expected(getattr(xp, name), xp.asarray(a), scalar)
        if isinstance(exp, Exception):
            assert isinstance(r, Exception), (name, r)
        else:
            _same(r, exp)
        _same(getattr(xp, name)(scalar, xp.asarray(a)), getattr(np, name)(scalar, a)) \
            if not isinstance(_expected(getattr(np, name), scalar, a), Exception) else None


def test_declines_unusual_calls_with_the_same_results():
    a = xp.asarray(np.arange(12, dtype=np.float32).reshape(3, 4))
    row = xp.asarray(np.arange(4, dtype=np.float32))
    assert xp.add._fast(a, row) is None                          # broadcasting: the general path
    _same(xp.add(a, row), np.arange(12, dtype=np.float32).reshape(3, 4) + np.arange(4, dtype=np.float32))
    assert xp.add._fast(a[:, ::2], a[:, ::2]) is None           # non-contiguous
    assert xp.add._fast(a, np.ones((3, 4), np.float32)) is None  # a NumPy array operand
    assert xp.add._fast(xp.asarray(np.zeros(0)), 1) is None     # empty
    assert xp.add._fast(1, 2) is None                            # no array

    class Sub(xp.ndarray):
        __slots__ = ()
    s = object.__new__(Sub)
    s._t = a._t
    assert xp.add._fast(s, a) is None                            # a subclass
    o = xp.zeros((3, 4), dtype=xp.float32)
    r = xp.add(a, 1, out=o)                                      # out=: the general path
    assert r is o
    _same(o, np.arange(12, dtype=np.float32).reshape(3, 4) + 1)
    _same(xp.add(a, 1, dtype=xp.float64), np.add(np.arange(12, dtype=np.float32).reshape(3, 4), 1, dtype=np.float64))
    c = xp.asarray(np.array([1 + 2j, 3 - 1j], np.complex64))
    assert xp.multiply._fast(xp.conj(c), c) is None or xp.conj(c)._t.is_conj() is False
    _same(xp.multiply(xp.conj(c), c), np.conj(np.array([1 + 2j, 3 - 1j], np.complex64)) * np.array([1 + 2j, 3 - 1j], np.complex64))


def test_switches_are_read_per_call():
    a = xp.asarray(np.arange(16, dtype=np.float32))
    assert xp.add._fast(a, a) is not None
    _host.ENABLED = False
    try:
        assert xp.add._fast(a, a) is None
        assert xp.sum._host_fast(a) is None
        _same(a + a, np.arange(16, dtype=np.float32) * 2)
    finally:
        _host.ENABLED = True
    with xp.float64_mode("float32"):
        assert xp.add._fast(a, a) is None                 # float64 modes: the general path
        assert xp.sum._host_fast(a) is None


def test_result_is_npu_memory_from_the_caching_allocator():
    a = xp.ones(1000, dtype=xp.float64)
    gc.collect()
    torch.npu.synchronize()
    before = torch.npu.memory_allocated()
    r = xp.add._fast(a, a)
    assert r is not None and r._h == ()                     # no view cache made on the fast path...
    h = _host.host_view(r, r._t)                            # ...the Python path builds it when it needs it
    assert h[0] is r._t and r._h is h and h[2].ctypes.data == r.data.ptr
    assert torch.npu.memory_allocated() - before >= 8000
    assert _C._device_of_ptr(r.data.ptr) == 0
    del r, h
    assert torch.npu.memory_allocated() == before
    s = xp.sum._host_fast(a)
    assert s is not None and s._t.device.type == "npu"
    del s


def test_waits_for_work_pending_on_the_current_stream():
    a = xp.zeros(16, dtype=xp.float32)
    fill_later(a, 7.0)
    r = xp.add._fast(a, 1)
    assert xp.asnumpy(r).tolist() == [8.0] * 16
    fill_later(a, 2.0)
    assert float(xp.asnumpy(xp.sum._host_fast(a))) == 32.0


def test_graph_capture_declines_and_replays():
    a = xp.ones(16, dtype=xp.float32)
    a + a
    xp.sum(a)
    g = torch.npu.NPUGraph()
    with torch.npu.stream(torch.npu.Stream()), torch.npu.graph(g):
        assert xp.add._fast(a, a) is None
        assert xp.sum._host_fast(a) is None
        r = xp.add(a, a)
    xp.to_torch(a).fill_(5.0)
    g.replay()
    torch.npu.synchronize()
    assert xp.asnumpy(r).tolist() == [10.0] * 16


def test_large_calls_follow_the_measured_choice():
    n = _host.SMALL * 4
    f = xp.asarray(np.linspace(0, 1, n))
    u = xp.asarray(np.arange(n, dtype=np.uint32))
    threads = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        assert xp.add._fast(f, f) is not None            # NumPy's loop is faster per thread
        assert xp.sin._fast(f) is None                   # PyTorch's float64 sin is
        assert xp.sin._fast(f.astype(np.float32)) is not None   # NumPy's SIMD float32 sin (NUMPY_FASTER_FOR)
        assert xp.exp._fast(f) is not None               # NumPy's SIMD exp, float64 too
        assert xp.power._fast(u, 2) is not None          # (unsigned: NumPy's at any size)
        assert xp.argmax._host_fast(f) is not None
        torch.set_num_threads(2)
        assert xp.add._fast(f, f) is None
        assert xp.multiply._fast(u, 3) is not None      # unsigned: NumPy's exact loop at any size
    finally:
        torch.set_num_threads(threads)


@pytest.mark.parametrize("dt", ["bool", "int8", "int32", "int64", "uint16", "uint32", "uint64", "float16",
                                "float32", "float64", "complex64"])
def test_functions_match_numpy(dt):
    a = _data(dt)
    m = a.reshape(4, 4)
    xa, xm = xp.asarray(a), xp.asarray(m)
    cases = [
        (xp.sum, np.sum, (xa,), (a,), {}), (xp.sum, np.sum, (xm,), (m,), {"axis": 0}),
        (xp.max, np.max, (xa,), (a,), {}), (xp.min, np.min, (xm,), (m,), {"axis": 1, "keepdims": True}),
        (xp.argmax, np.argmax, (xa,), (a,), {}), (xp.argmin, np.argmin, (xm,), (m,), {"axis": 0}),
        (xp.cumsum, np.cumsum, (xa,), (a,), {}), (xp.mean, np.mean, (xa,), (a,), {}),
        (xp.std, np.std, (xm,), (m,), {"axis": 1}), (xp.var, np.var, (xa,), (a,), {"ddof": 1}),
        (xp.sort, np.sort, (xa,), (a,), {}), (xp.argsort, np.argsort, (xa,), (a,), {"kind": "stable"}),
        (xp.unique, np.unique, (xa,), (a,), {}), (xp.unique, np.unique, (xa,), (a,), {"return_counts": True}),
        (xp.where, np.where, (xa > 0, xa, xa * 2), (a > 0, a, a * 2), {}),
        (xp.take, np.take, (xa, xp.asarray(np.array([3, 0, 5]))), (a, np.array([3, 0, 5])), {}),
    ]
    for xf, nf, xargs, nargs, kw in cases:
        exp = _expected(nf, *nargs, **kw)
        if isinstance(exp, Exception):
            continue
        fast = xf._host_fast(*xargs, **kw)
        assert fast is not None, (nf.__name__, kw)
        _same(fast, exp)
        _same(xf(*xargs, **kw), exp)


def test_functions_decline_unusual_calls():
    a = xp.asarray(np.arange(16, dtype=np.float32))
    o = xp.zeros((), dtype=xp.float32)
    assert xp.sum._host_fast(a, out=o) is None
    r = xp.sum(a, out=o)
    assert r is o and float(xp.asnumpy(o)) == 120.0
    _same(xp.sum._host_fast(a[::2]), np.sum(np.arange(16, dtype=np.float32)[::2]))   # strided views too
    m = xp.asarray(np.arange(12, dtype=np.int32).reshape(3, 4))
    f = xp.ascontiguousarray._host_fast(m.T)                      # NumPy's transpose copy
    _same(f, np.ascontiguousarray(np.arange(12, dtype=np.int32).reshape(3, 4).T))
    assert f.flags.c_contiguous
    k = m.T.astype(np.float64)                                    # order='K' keeps NumPy's (Fortran) order
    _same(k, np.arange(12, dtype=np.int32).reshape(3, 4).T.astype(np.float64))
    assert k.flags.f_contiguous and not k.flags.c_contiguous
    assert m.astype(np.int32, copy=False) is m                   # NumPy returns its input: xp returns m
    assert xp.sort._host_fast(a, descending=True) is None         # not NumPy's argument: xp's own code
    _same(xp.sort(a, descending=True), np.arange(16, dtype=np.float32)[::-1])
    with pytest.raises(np.exceptions.AxisError):
        xp.sum(a, axis=3)                                          # xp's own error
    _same(xp.take(a, xp.asarray(np.array([1, 2]))), np.array([1, 2], np.float32))
    with pytest.raises(IndexError):
        xp.take(a, xp.asarray(np.array([100])))


def test_decorated_functions_keep_their_names_and_docs():
    for f in (xp.sum, xp.argmax, xp.sort, xp.where, xp.std, xp.ascontiguousarray, xp.ndarray.astype):
        assert f.__doc__ and f.__name__ in ("sum", "argmax", "sort", "where", "std", "ascontiguousarray", "astype")


def test_big_results_are_numpy_buffers_in_npu_memory():
    # a big call: NumPy allocates its result through the npu caching allocator (no copy after it)
    n = _host.SMALL * 8
    a = np.arange(n, dtype=np.int64) % 97
    xa = xp.asarray(a)
    threads = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        before = torch.npu.memory_allocated()
        r = xp.cumsum._host_fast(xa)
        assert r is not None and r._t.device.type == "npu"
        np.testing.assert_array_equal(xp.asnumpy(r), np.cumsum(a))
        assert torch.npu.memory_allocated() - before >= r._t.nbytes   # counted as npu memory
        t = xp.ascontiguousarray._host_fast(xa.reshape(64, -1).T)      # a transposed copy, C order
        np.testing.assert_array_equal(xp.asnumpy(t), np.ascontiguousarray(a.reshape(64, -1).T))
        assert t.flags.c_contiguous
        u = xp.unique._host_fast(xa, return_counts=True)              # a tuple of results
        np.testing.assert_array_equal(xp.asnumpy(u[1]), np.unique(a, return_counts=True)[1])
        del r, t, u
        assert torch.npu.memory_allocated() == before                 # freed back to the allocator
    finally:
        torch.set_num_threads(threads)


@pytest.mark.parametrize("n", [16, _host.SMALL * 4])
@pytest.mark.parametrize("dt", ["float32", "int64", "uint32", "bool"])
def test_mask_getitem_and_matmul_run_numpy(n, dt):
    a = (np.arange(n) % 7).astype(dt)
    xa = xp.asarray(a)
    threads = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        mask = xa > 3 if dt != "bool" else xa
        assert _core._mask_getitem._host_fast(xa, mask) is not None
        r = xa[mask]
        e = a[a > 3] if dt != "bool" else a[a]
        assert r.dtype == e.dtype and r._t.device.type == "npu"
        np.testing.assert_array_equal(xp.asnumpy(r), e)
        with pytest.raises(IndexError):
            xa[xp.asarray(np.ones(3, bool))]                             # NumPy declines: xp's error
        m = int(n ** 0.5)
        b = a[:m * m].reshape(m, m)
        xb = xp.asarray(b)
        assert xp.matmul._host_fast(xb, xb) is not None
        r = xb @ xb
        assert r.dtype == (b @ b).dtype
        np.testing.assert_allclose(xp.asnumpy(r).astype(float), (b @ b).astype(float), rtol=1e-6)
    finally:
        torch.set_num_threads(threads)


def test_npu_memory_short_for_numpys_buffers_raises_torch_oom():
    # NumPy's buffers of a big call come from the npu caching allocator: when the device is full the
    # call declines and xp's own path raises torch.OutOfMemoryError (not NumPy's MemoryError)
    from npudist.testing.multiproc import run_python

    code = (
        "import numpy as np, torch, npudist.xp as xp\n"
        "torch.set_num_threads(1)\n"
        "a = xp.asarray(np.ones(8 << 20, np.int8))\n"                  # 8 MiB in, 64 MiB of int64 out
        "try:\n"
        "    xp.cumsum(a)\n"
        "except torch.OutOfMemoryError:\n"
        "    print('torch-oom')\n"
    )
    out = run_python(["-c", code], env={"NPUDIST_DEVICE_MEMORY": "64MiB", "NPUDIST_DEVICE_COUNT": "1"}, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "torch-oom"
