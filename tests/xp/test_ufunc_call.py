"""xp's ufuncs and ndarray's operators as C callables (npudist._C._XpUfuncBase /
_XpUfuncOp): the C fast path runs from the call itself, and every call it declines gets the Python
path's result and errors, unchanged. Plus npudist._C._synchronize's idle fast path."""
import inspect
import operator
import time

import numpy as np
import pytest
import torch

import npudist.xp as xp
from npudist import _C
from npudist.xp import _core
from npudist.xp._core import _operators

from ._host_data import fill_later

pytestmark = pytest.mark.skipif(not hasattr(_C, "_XpUfuncOp"), reason="extension built without xp's C callables")


def _same(r, expected):
    got = xp.asnumpy(r)
    assert got.dtype == expected.dtype, (got.dtype, expected.dtype)
    np.testing.assert_array_equal(got, expected)


def test_ufuncs_derive_from_the_c_base_and_take_vectorcalls():
    assert isinstance(xp.add, _C._XpUfuncBase) and isinstance(_core.OPS["add"], _C._XpUfuncBase)
    assert type(xp.add).__flags__ & (1 << 11)           # Py_TPFLAGS_HAVE_VECTORCALL, set for the subclass
    assert "__call__" not in type(xp.add).__dict__ and "__call__" not in type(_core.OPS["add"]).__dict__
    sig = inspect.signature(xp.add)                     # the Python call's signature, as before
    assert list(sig.parameters)[:3] == ["args", "out", "where"] and sig.parameters["casting"].default == "same_kind"
    assert list(inspect.signature(xp.ndarray.__add__).parameters) == ["self", "o"]


@pytest.mark.parametrize("dunder", sorted(_operators.OPERATORS))
def test_every_operator_is_a_c_method_descriptor_with_its_python_fallback(dunder):
    op = xp.ndarray.__dict__[dunder]
    assert isinstance(op, _C._XpUfuncOp)
    assert op.__name__ == dunder and callable(op.__wrapped__) and op.__wrapped__.__name__ == dunder
    a = xp.asarray(np.arange(1, 5, dtype=np.int64))
    bound = getattr(a, dunder)
    assert bound.__self__ is a


@pytest.mark.parametrize("name, fn", [
    ("add", operator.add), ("sub", operator.sub), ("mul", operator.mul), ("truediv", operator.truediv),
    ("floordiv", operator.floordiv), ("mod", operator.mod), ("pow", operator.pow), ("and", operator.and_),
    ("or", operator.or_), ("xor", operator.xor), ("lshift", operator.lshift), ("rshift", operator.rshift),
    ("lt", operator.lt), ("le", operator.le), ("gt", operator.gt), ("ge", operator.ge), ("eq", operator.eq),
    ("ne", operator.ne), ("divmod", divmod)])
@pytest.mark.parametrize("dtype", [np.int32, np.uint32, np.int64])
def test_binary_operators_match_numpy_forward_and_reflected(name, fn, dtype):
    a_np = np.arange(1, 17, dtype=dtype)
    b_np = (np.arange(16, dtype=dtype) % 5 + 1).astype(dtype)
    a, b = xp.asarray(a_np), xp.asarray(b_np)
    for args_np, args_xp in (((a_np, b_np), (a, b)), ((a_np, 3), (a, 3)), ((3, a_np), (3, a))):
        with np.errstate(all="ignore"):
            expected = fn(*args_np)
        got = fn(*args_xp)
        if isinstance(expected, tuple):
            for g, e in zip(got, expected):
                _same(g, e)
        else:
            _same(got, expected)


@pytest.mark.parametrize("fn", [operator.neg, operator.pos, abs, operator.invert])
def test_unary_operators_match_numpy(fn):
    a_np = np.arange(-8, 8, dtype=np.int16)
    _same(fn(xp.asarray(a_np)), fn(a_np))


def test_declined_calls_take_the_python_path_with_its_results_and_errors():
    a_np = np.arange(12, dtype=np.float32).reshape(3, 4)
    a = xp.asarray(a_np)
    row = xp.asarray(np.arange(4, dtype=np.float32))
    _same(a + row, a_np + np.arange(4, dtype=np.float32))                   # broadcasting
    _same(a + np.ones((3, 4), np.float32), a_np + 1)                       # a NumPy operand
    _same(a[:, ::2] * 2, a_np[:, ::2] * 2)                                  # non-contiguous
    _same(a == None, a_np == None)                                          # noqa: E711  (the operator itself is tested)
    _same(a != "x", a_np != "x")
    with pytest.raises(TypeError):
        a + "x"
    with pytest.raises(ValueError, match="could not be broadcast"):          # NumPy's error class
        a + xp.ones(5, dtype=xp.float32)                                    # shapes that do not broadcast
    out = xp.empty((3, 4), dtype=xp.float64)
    assert xp.add(a, a, out=out) is out                                     # keywords: the Python call
    _same(out, (a_np + a_np).astype(np.float64))
    _same(xp.add(a, 1, dtype=xp.float64), a_np.astype(np.float64) + 1)
    _same(xp.add(a, a, where=True, casting="same_kind"), a_np + a_np)     # defaults by keyword: fast path too
    with pytest.raises(TypeError):
        xp.add(a)                                                           # wrong number of operands
    with pytest.raises(TypeError):
        xp.add(a, a, bogus=1)


def test_in_place_operators_write_into_the_array():
    a_np = np.arange(16, dtype=np.int64)
    a = xp.asarray(a_np)
    t = a._t
    a += 1
    a *= 3
    assert a._t is t
    _same(a, (a_np + 1) * 3)


def test_c_call_waits_for_work_pending_on_the_stream():
    a = xp.zeros(16, dtype=xp.float32)
    fill_later(a, 3.0)
    _same(a + a, np.full(16, 6.0, np.float32))
    fill_later(a, 2.0)
    _same(xp.multiply(a, a), np.full(16, 4.0, np.float32))


def test_synchronize_idle_and_pending():
    dev = torch.npu.current_device()
    torch.npu.synchronize()
    assert _C._synchronize(dev) is None                                     # idle: returns at once
    a = xp.zeros(16, dtype=xp.float32)
    fill_later(a, 5.0, delay=0.2)
    t0 = time.perf_counter()
    _C._synchronize(dev)                                                    # pending: waits for it
    assert time.perf_counter() - t0 >= 0.1
    assert float(xp.to_torch(a)[0]) == 5.0
    with pytest.raises(RuntimeError, match="out of range"):
        _C._synchronize(99)
    with pytest.raises(TypeError, match="must be an int"):
        _C._synchronize("0")
