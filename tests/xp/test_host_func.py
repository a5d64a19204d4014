"""numpy_first's C object (csrc/xp/host_func.cpp, npudist.xp._host.numpy_first) as the decorated
function itself: it falls back to xp's own function, binds as a method, keeps the function's name,
doc, signature, repr and pickling; its input views are cached on the arrays and re-checked per call;
unsigned results are UIntTensors that own their memory; NumPy's FP-error state is ignored whichever
``fp`` mode a function has; clip and ``a @ b`` take NumPy's function on small arrays."""
import inspect
import pickle

import numpy as np
import pytest

import npudist.xp as xp
from npudist import _C
from npudist.xp import _host

pytestmark = pytest.mark.skipif(not hasattr(_C, "_XpHostFunc"), reason="extension built without xp's fast path")


def _same(r, expected):
    assert type(r) is xp.ndarray
    e = np.asarray(expected)
    assert r.dtype == e.dtype and r.shape == e.shape
    np.testing.assert_array_equal(xp.asnumpy(r), e)


def test_the_c_object_is_the_function():
    assert type(xp.sum) is _C._XpHostFunc
    assert xp.sum.__name__ == "sum" and xp.sum.__module__ == "npudist.xp._core._reductions" and xp.sum.__doc__
    assert "axis" in inspect.signature(xp.sum).parameters          # through __wrapped__
    assert repr(xp.sum).startswith("<function sum (NumPy first)")
    assert pickle.loads(pickle.dumps(xp.sum)) is xp.sum               # by reference, as functions
    a = xp.asarray(np.arange(12, dtype=np.float64).reshape(3, 4))
    assert a.astype.__self__ is a                                     # binds as a method
    _same(a.astype(np.float32), np.arange(12, dtype=np.float32).reshape(3, 4))
    assert xp.ndarray.astype(a, np.int32).dtype == np.int32          # unbound, self passed explicitly


def test_declined_calls_fall_back_and_the_probe_returns_none():
    a = xp.asarray(np.arange(16, dtype=np.float32))
    assert xp.sort._host_fast(a, descending=True) is None           # not NumPy's argument
    _same(xp.sort(a, descending=True), np.arange(16, dtype=np.float32)[::-1])
    with pytest.raises(np.exceptions.AxisError):
        xp.sum(a, axis=3)                                            # NumPy refuses, xp's own error
    with pytest.raises(TypeError):
        _C._XpHostFunc(np.sum, True, True, xp.ndarray, int, None, {}, None, None, None)   # errvar
    with pytest.raises(ValueError):
        _C._XpHostFunc(np.sum, True, True, xp.ndarray, xp.ndarray, None, {}, None,
                       _host._ERR, _host._IGNORE, None, 7)            # fp out of range


def test_cached_input_views_follow_the_array():
    a = xp.asarray(np.arange(16, dtype=np.int64))
    _same(xp.sum(a), np.int64(120))
    assert a._h[0] is a._t and a._h[2].ctypes.data == a.data_ptr    # cached on first use
    a[3] = 100                                                       # writes through: same buffer
    _same(xp.sum(a), np.int64(217))
    a.shape = (4, 4)                                                  # a new tensor object: new view
    _same(xp.sum(a, axis=0), np.arange(16).reshape(4, 4).sum(axis=0) + np.array([0, 0, 0, 97]))
    b = xp.asarray(np.arange(16, dtype=np.int64))
    a._t = b._t                                                       # another buffer under the array
    _same(xp.sum(a), np.int64(120))


def test_unsigned_results_own_their_memory():
    u = xp.asarray(np.arange(16, dtype=np.uint32))
    for r in (xp.sort(u), u + u, xp.cumsum(u)):
        assert type(r._t).__name__ == "UIntTensor" and r._t._base is None
        assert r.flags.owndata and r.base is None
    _same(u + np.uint32(4294967295), np.arange(16, dtype=np.uint32) + np.uint32(4294967295))   # wraparound
    _same(xp.sum(u), np.sum(np.arange(16, dtype=np.uint32)))            # uint64 accumulation


def test_fp_errors_are_ignored_in_every_mode():
    big = xp.asarray(np.full(16, 3e38, np.float32))
    i = xp.asarray(np.arange(16, dtype=np.int64) * 10**17)
    with np.errstate(all="raise"):
        _same(xp.sum(big), np.float32(np.inf))                        # FP_IF_FLOAT with a float array
        _same(xp.sum(i, dtype=np.float16), np.float16(np.inf))        # FP_IF_FLOAT with dtype=: state set
        _same(xp.sum(i), np.sum(np.arange(16, dtype=np.int64) * 10**17))   # integer: nothing to ignore
        _same(xp.sort(xp.asarray(np.array([np.nan, 1.0, -np.inf]))), np.array([-np.inf, 1.0, np.nan]))
        _same(xp.clip(big, 0, 1e39), np.full(16, 3e38, np.float32))   # 1e39: inf in float32, a warning
        _same(xp.multiply(big, 2), np.full(16, np.inf, np.float32))    # (the ufunc path's rule too)
        assert np.geterr()["over"] == "raise"                         # the caller's state is untouched


@pytest.mark.parametrize("dt", ["float32", "int32", "int64", "uint64", "bool"])
def test_clip_runs_numpys(dt):
    a = (np.arange(16) * 7 % 11).astype(dt)
    xa = xp.asarray(a)
    assert xp.clip._host_fast(xa, 2, 8) is not None
    with np.errstate(all="ignore"):
        _same(xp.clip(xa, 2, 8), np.clip(a, 2, 8))
        _same(xp.clip(xa, 2.5, None), np.clip(a, 2.5, None))
        _same(xa.clip(max=5), a.clip(max=5))
    if dt == "int32":
        _same(xp.clip(xa, -2**40, 2**40), np.clip(a, -2**40, 2**40))  # out-of-range bounds: NumPy 2.4's rule
    o = xp.zeros(16, dtype=dt)
    assert xp.clip(xa, 2, 8, out=o) is o                               # out=: xp's own path


def test_matmul_operator_runs_numpys():
    m = np.arange(16, dtype=np.float64).reshape(4, 4)
    xm = xp.asarray(m)
    assert type(xp.ndarray.__matmul__) is _C._XpHostFunc
    _same(xm @ xm, m @ m)
    _same(xm @ xp.asarray(np.arange(4.0)), m @ np.arange(4.0))
    with pytest.raises(ValueError):
        xm @ xp.asarray(np.ones(3))                                   # xp's own error
