"""xp.einsum equals numpy.einsum: both calling forms, implicit output, views, dtypes, errors."""
import numpy as np
import pytest

import npudist.xp as nxp
from tests.xp.compare import numpy_xp_compare


def _arange(xp, shape, dtype):
    return xp.asarray((np.arange(int(np.prod(shape))) + 1).reshape(shape).astype(dtype))


@pytest.mark.parametrize("subs,shape", [("ij", (2, 3)), ("ji", (2, 3)), ("ii->i", (3, 3)), ("jii->ij", (3, 3, 3)),
                                        ("...ii->...i", (2, 3, 3)), ("i...j->ij", (2, 3)), ("ij->...ij", (2, 3)),
                                        ("ij->", (2, 3)), ("ii", (3, 3)), ("ij->j", (2, 3)), ("", ()), ("iji->j", (2, 3, 2))])
@pytest.mark.parametrize("dtype", [np.bool_, np.int8, np.uint16, np.uint64, np.float16, np.float32, np.complex128])
@numpy_xp_compare(rtol=1e-2)
def test_unary(subs, shape, dtype, xp):
    return xp.einsum(subs, _arange(xp, shape, dtype))


@pytest.mark.parametrize("subs,shape", [("ij", (2, 3)), ("ii->i", (3, 3)), ("...ii->...i", (2, 3, 3))])
@pytest.mark.parametrize("dtype", [np.int32, np.uint32, np.float64])
def test_unary_without_sum_is_a_view_in_the_input_dtype(subs, shape, dtype):
    for xp in (np, nxp):
        a = _arange(xp, shape, dtype)
        b = xp.einsum(subs, a, dtype=np.float64)   # NumPy ignores dtype= for a view
        assert b.base is a and b.dtype == np.dtype(dtype), xp


@pytest.mark.parametrize("subs,sa,sb", [("i,i", (3,), (3,)), ("ij,jk", (2, 3), (3, 4)), ("ij,jk->ik", (2, 1), (1, 4)),
                                        ("...kl,k...", (2, 3, 4, 5), (4,)), ("ij,ij->ij", (2, 1), (2, 3)),
                                        ("i,j", (2,), (3,))])
@pytest.mark.parametrize("da,db", [(np.int8, np.int8), (np.uint8, np.int16), (np.bool_, np.bool_),
                                   (np.float16, np.float32), (np.int64, np.complex64), (np.uint64, np.uint64)])
@numpy_xp_compare(rtol=1e-3)
def test_binary(subs, sa, sb, da, db, xp):
    return xp.einsum(subs, _arange(xp, sa, da), _arange(xp, sb, db))


@numpy_xp_compare()
def test_sublist_form_and_dtype(xp):
    a = _arange(xp, (3, 3), np.float32)
    return (xp.einsum(a, np.array([0, 0])), xp.einsum(a, [0, 1], a, [1, 2], [0, 2]),
            xp.einsum(a, [Ellipsis, 0], [Ellipsis]), xp.einsum("ij->i", a, dtype=np.float64),
            xp.asarray(xp.einsum("->", 2, dtype=np.int8)), xp.einsum(",i->", 3, _arange(xp, (4,), np.int16)))


@pytest.mark.parametrize("call", [
    lambda xp: xp.einsum("..", xp.zeros((2, 2, 2))), lambda xp: xp.einsum("...i...", xp.zeros((2, 2, 2))),
    lambda xp: xp.einsum("...->", xp.zeros((2, 2, 2))), lambda xp: xp.einsum(), lambda xp: xp.einsum(""),
    lambda xp: xp.einsum(0, 0), lambda xp: xp.einsum("", 0, 0), lambda xp: xp.einsum(",", 0),
    lambda xp: xp.einsum("i", 0), lambda xp: xp.einsum("i->i", xp.arange(6).reshape(2, 3)),
    lambda xp: xp.einsum("i%", xp.zeros(2)), lambda xp: xp.einsum("i->ij", xp.zeros(2)),
    lambda xp: xp.einsum("ij->jij", xp.zeros((2, 2))), lambda xp: xp.einsum("ij->i,j", xp.zeros((2, 2))),
    lambda xp: xp.einsum("ii", xp.arange(6).reshape(2, 3)), lambda xp: xp.einsum("i,i", xp.arange(2), xp.arange(3)),
    lambda xp: xp.einsum("...,...", xp.arange(2), xp.arange(3)), lambda xp: xp.einsum("i-i", xp.zeros(2)),
    lambda xp: xp.einsum("i->->i", xp.zeros(2)), lambda xp: xp.einsum(xp.arange(2), [None]),
    lambda xp: xp.einsum(xp.arange(2), [0], [1]), lambda xp: xp.einsum(xp.arange(2), [Ellipsis, 0, Ellipsis]),
    lambda xp: xp.einsum(3, [0]), lambda xp: xp.einsum(xp.arange(2), [0, 60]),
    lambda xp: xp.einsum("ij,jk", xp.ones((2, 2), dtype=np.float64), xp.ones((2, 2)), dtype=np.float32),
])
@numpy_xp_compare(accept_error=True)
def test_errors(call, xp):
    return call(xp)
