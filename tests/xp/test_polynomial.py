"""xp.polynomial (polyutils and the power-series functions) equals numpy.polynomial."""
import numpy as np
import pytest

import npudist.xp as nxp
from tests.xp.compare import NUMERIC_DTYPES, numpy_xp_compare, sample

DTYPES = NUMERIC_DTYPES + [np.uint16, np.uint32, np.uint64]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("trim", [True, False])
@numpy_xp_compare()
def test_as_series_rows(dtype, trim, xp):
    a = xp.asarray(sample(np, (3, 5), dtype))
    a[1, 3:] = 0
    return xp.polynomial.polyutils.as_series(a, trim=trim)


@pytest.mark.parametrize("dtype", [np.int8, np.float16, np.complex64])
@numpy_xp_compare()
def test_as_series_1d_is_one_series_per_element(dtype, xp):
    return xp.polynomial.polyutils.as_series(xp.asarray(sample(np, (6,), dtype)))


@pytest.mark.parametrize("make", [lambda xp: xp.zeros((3, 4, 5)), lambda xp: xp.ones(4, dtype=bool),
                                  lambda xp: [xp.zeros(0)]])
@numpy_xp_compare(accept_error=True)
def test_as_series_errors(make, xp):
    return xp.polynomial.polyutils.as_series(make(xp))


@numpy_xp_compare()
def test_trimseq_view_and_zeros(xp):
    a = xp.zeros(10, dtype=np.float32)
    b = xp.polynomial.polyutils.trimseq(a)
    assert xp.shares_memory(a[:1], b)
    return b, xp.polynomial.polyutils.trimseq(xp.asarray([1, 5, 2, 0, 0], dtype=np.int16))


@pytest.mark.parametrize("make", [lambda xp: xp.asarray(3.0), lambda xp: xp.ones((3, 4, 5))])
@numpy_xp_compare(accept_error=True)
def test_trimseq_errors(make, xp):
    return xp.polynomial.polyutils.trimseq(make(xp))


@pytest.mark.parametrize("tol", [0, 1e-3])
@pytest.mark.parametrize("dtype", [np.int32, np.float32, np.float64, np.uint64, np.complex128])
@numpy_xp_compare()
def test_trimcoef(tol, dtype, xp):
    a = xp.asarray(np.array([1, 2, 0, 3, 0, 3e-4, 1e-3]).astype(dtype))
    return (xp.polynomial.polyutils.trimcoef(a, np.dtype(dtype).type(tol)),
            xp.polynomial.polyutils.trimcoef(xp.zeros(4, dtype), tol),
            xp.polynomial.polyutils.trimcoef(xp.asarray(np.dtype(dtype).type(2)), tol))


@pytest.mark.parametrize("args", [(np.zeros(0), 0), (np.ones(3), -1e-3), (np.ones((2, 3)), 0), (np.ones(3, bool), 0)])
@numpy_xp_compare(accept_error=True)
def test_trimcoef_errors(args, xp):
    return xp.polynomial.polyutils.trimcoef(xp.asarray(args[0]), args[1])


def test_scalar_cast_to_uint64_on_creation():
    # the path testing.shaped_random((), xp, uint64) takes: a Python float with a dtype
    assert nxp.asarray(5.49, dtype=np.uint64).get() == np.asarray(5.49, dtype=np.uint64)
    with pytest.raises(OverflowError):
        nxp.asarray(-1, dtype=np.uint8)


@pytest.mark.parametrize("dtype", DTYPES + [np.bool_])
@pytest.mark.parametrize("shape,deg", [((10,), 6), ((2, 3), 2), ((), 4)])
@numpy_xp_compare()
def test_polyvander(dtype, shape, deg, xp):
    return xp.polynomial.polynomial.polyvander(xp.asarray(sample(np, shape, dtype, low=-3, high=3)), deg)


@pytest.mark.parametrize("deg", [-3, 2.6, 5.0])
@numpy_xp_compare(accept_error=True)
def test_polyvander_bad_degree(deg, xp):
    return xp.polynomial.polynomial.polyvander(xp.arange(3), deg)


@pytest.mark.parametrize("coef", [[3, 5, 7, 0, 0, 0], [0, 0, 0, 3], [0, 3, 0, 0], [2.5, -4.0]])
@pytest.mark.parametrize("dtype", [np.int64, np.uint32, np.float16, np.float32, np.complex64])
@numpy_xp_compare()
def test_polycompanion(coef, dtype, xp):
    return xp.polynomial.polynomial.polycompanion(xp.asarray(np.array(coef).astype(dtype)))


@pytest.mark.parametrize("coef", [np.zeros(10), np.zeros(0), np.array([3, 0, 0.]), np.ones((2, 3)), np.array(1.0)])
@numpy_xp_compare(accept_error=True)
def test_polycompanion_errors(coef, xp):
    return xp.polynomial.polynomial.polycompanion(xp.asarray(coef))


@numpy_xp_compare()
def test_series_arithmetic(xp):
    P = xp.polynomial.polynomial
    c1, c2 = xp.asarray([1, 2, 3]), xp.asarray([4.0, 0.5])
    x = xp.asarray([[0.5, -1.0], [2.0, 3.0]])
    return (P.polyval(x, c1), P.polyval(2, [1, 2]), P.polyadd(c1, c2), P.polysub(c2, c1), P.polysub(c1, c1),
            P.polymulx(c2), P.polymul(c1, c2), P.polyder(c1, 2), P.polyder(xp.ones((3, 2)), axis=1),
            P.polyint(c1, 2, k=[1, 2], lbnd=1), P.polyline(3, 2), P.polyline(3, 0))
