"""xp.poly1d and the top-level polynomial routines (poly, polyadd, ..., polyfit, roots) equal NumPy's."""
import numpy as np
import pytest

import npudist.xp as nxp
from tests.xp.compare import ALL_DTYPES, NUMERIC_DTYPES, numpy_xp_compare, sample

DTYPES = ALL_DTYPES + [np.uint16, np.uint32, np.uint64]


def _plain(r):
    """poly1d results compared as (coefficients, variable)."""
    if isinstance(r, (np.poly1d, nxp.poly1d)):
        assert type(r) is (np.poly1d if isinstance(r, np.poly1d) else nxp.poly1d)
        return r.coeffs, r.variable
    if isinstance(r, tuple):
        return tuple(_plain(v) for v in r)
    return r


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("variable", [None, "z"])
@numpy_xp_compare()
def test_construct_trims_leading_zeros(dtype, variable, xp):
    p = xp.poly1d(xp.array([0, 0, 1, 2, 0], dtype), variable=variable)
    assert isinstance(p.coeffs, xp.ndarray)
    return _plain(p) + (p.order, len(p), repr(p), str(p))


@pytest.mark.parametrize("dtype", [np.int8, np.float32, np.complex128])
@numpy_xp_compare()
def test_all_zero_and_zero_dim(dtype, xp):
    return _plain(xp.poly1d(xp.zeros(3, dtype))), _plain(xp.poly1d(xp.asarray(np.array(4, dtype)))), \
        _plain(xp.poly1d(xp.zeros(0, dtype)))


@numpy_xp_compare()
def test_from_roots_and_of_poly1d(xp):
    p = xp.poly1d(xp.array([1.0, -2.0, 3.0]), True, variable="t")
    q = xp.poly1d(p, variable="s")
    return _plain(p), _plain(q)


@pytest.mark.parametrize("dtype", NUMERIC_DTYPES)
@pytest.mark.parametrize("op", ["add", "sub", "mul", "rsub", "rmul", "neg", "pow", "div", "eq", "ne"])
@numpy_xp_compare(accept_error=True)
def test_operators(dtype, op, xp):
    p = xp.poly1d(sample(xp, (5,), dtype, seed=1) + 1 if dtype != np.uint8 else sample(xp, (5,), dtype) + 1)
    q = xp.poly1d(xp.array([3, 1], dtype))
    a = sample(xp, (3,), dtype, seed=2)
    f = {"add": lambda: (p + q, p + a, p + 2), "sub": lambda: (p - q, p - a), "mul": lambda: (p * q, p * a, p * 3),
         "rsub": lambda: 2 - p, "rmul": lambda: 2 * p, "neg": lambda: -p, "pow": lambda: (p ** 3, p ** np.int64(0)),
         "div": lambda: (p / q, p / 2), "eq": lambda: (bool(p == q), bool(p == xp.poly1d(p.coeffs))),
         "ne": lambda: (bool(p != q), bool(p != xp.poly1d(p.coeffs)))}[op]
    return _plain(f())


@pytest.mark.parametrize("exp, err", [(-1, ValueError), (2.5, ValueError), (3.0, TypeError)])
def test_pow_errors(exp, err):
    for xp in (np, nxp):
        with pytest.raises(err):
            xp.poly1d(xp.arange(1, 4)) ** exp


@pytest.mark.parametrize("dtype", DTYPES)
@numpy_xp_compare()
def test_getitem_setitem(dtype, xp):
    p = xp.poly1d(xp.array([0, 0, 1, 2, 3], dtype))
    got = (p[0], p[2], p[7])
    p[6] = 1
    p[1] = 0
    return got, _plain(p)


def test_setitem_negative_and_coeffs_readonly():
    for xp in (np, nxp):
        p = xp.poly1d(xp.arange(1, 4))
        with pytest.raises(ValueError, match="negative powers"):
            p[-1] = 2
        with pytest.raises(AttributeError):
            p.coeffs = xp.arange(3)
        with pytest.raises(ValueError):
            xp.poly1d(xp.ones((2, 2)))


@pytest.mark.parametrize("dtype", DTYPES)
@numpy_xp_compare()
def test_call_and_polyval(dtype, xp):
    c = sample(xp, (4,), dtype, seed=3)
    x = sample(xp, (2, 3), dtype, seed=4)
    p = xp.poly1d(c)
    return p(x), xp.polyval(c, x), xp.polyval(c, dtype(2)), xp.polyval(c, 2), xp.polyval(c, 2.5)


@numpy_xp_compare()
def test_polyval_of_poly1d_and_errors(xp):
    assert isinstance(xp.polyval(xp.arange(3), xp.poly1d(xp.arange(2))), xp.poly1d)
    with pytest.raises(TypeError):
        xp.polyval(xp.asarray(3), xp.arange(3))
    with pytest.raises(ValueError):
        xp.polyval(xp.ones((2, 3, 4)), xp.ones((10, 5)))
    return _plain(xp.polyval(xp.arange(3), xp.poly1d(xp.arange(2))))


@pytest.mark.parametrize("dtype1", [np.int32, np.float32, np.complex64, np.bool_])
@pytest.mark.parametrize("dtype2", [np.uint8, np.float64, np.int16])
@pytest.mark.parametrize("name", ["polyadd", "polysub", "polymul", "polydiv"])
@numpy_xp_compare(accept_error=True)
def test_routines_mixed_dtypes(dtype1, dtype2, name, xp):
    a = sample(xp, (6,), dtype1, seed=5)
    b = sample(xp, (3,), dtype2, seed=6) + 1
    f = getattr(xp, name)
    return _plain(f(a, b)), _plain(f(xp.poly1d(a, variable="z"), b))


@pytest.mark.parametrize("dtype", [np.int64, np.float32, np.float64, np.complex128])
@numpy_xp_compare()
def test_poly_roots_der_int(dtype, xp):
    c = xp.array([1, -3, 2], dtype)
    return (xp.poly(c), xp.sort(xp.roots(c)), xp.roots(xp.array([0, 0], dtype)), xp.polyder(c), xp.polyint(c),
            _plain(xp.poly1d(c).deriv()), _plain(xp.poly1d(c).integ(k=1)))


@pytest.mark.parametrize("dtype", [np.int32, np.float32, np.float64])
@pytest.mark.parametrize("cov", [False, True, "unscaled"])
@numpy_xp_compare()
def test_polyfit(dtype, cov, xp):
    x = xp.array([0.5, 1.0, 2.0, 3.5, 5.0], dtype)
    y = x * x - 2 * x + xp.array([0.1, -0.2, 0.05, 0.0, 0.3], np.float32)
    w = xp.array([1.0, 2.0, 1.0, 0.5, 1.0])
    return xp.polyfit(x, y, 2, w=w, cov=cov)


def test_polyfit_full_and_warnings():
    res = {}
    for xp in (np, nxp):
        x = xp.arange(5.0)
        res[xp] = xp.polyfit(x, x * x, 2, full=True)
        with pytest.warns(np.exceptions.RankWarning):
            xp.polyfit(x, x, 6)
        with pytest.raises(TypeError):
            xp.polyfit(x.astype(np.float16), x.astype(np.float16), 2)
        with pytest.raises(ValueError):
            xp.polyfit(x, x, -1)
    for e, a in zip(res[np], res[nxp]):
        np.testing.assert_allclose(nxp.asnumpy(a) if isinstance(a, nxp.ndarray) else a, e, atol=1e-9)


def test_array_protocol():
    p = nxp.poly1d(nxp.array([1, 2, 3], np.int16))
    h = np.asarray(p)
    assert type(h) is np.ndarray and h.dtype == np.int16 and h.tolist() == [1, 2, 3]
    assert np.asarray(p, dtype=np.float32).dtype == np.float32
    with pytest.raises(ValueError, match="host copy"):
        np.asarray(p, copy=False)
    r = nxp.arange(3, dtype=np.int16) + p       # an array operand: elementwise, as NumPy's ndarray + poly1d
    assert isinstance(r, nxp.ndarray) and r.tolist() == [1, 3, 5]
