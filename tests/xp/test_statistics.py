"""median, quantile, cov, digitize, average and the nan statistics equal NumPy's (values, dtypes,
errors); mirrors npudist/xp/_statistics.py."""
import warnings

import numpy as np
import pytest

import npudist.xp as xp

from .compare import ALL_DTYPES, numpy_xp_compare, sample

METHODS = ["linear", "lower", "higher", "midpoint", "nearest"]


@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("axis", [None, 1, (0, 2)])
@numpy_xp_compare()
def test_median_every_dtype(dtype, axis, xp):
    return xp.median(sample(xp, (3, 4, 5), dtype), axis=axis)


@pytest.mark.parametrize("dtype", [np.float32, np.complex64, np.int16])
@numpy_xp_compare()
def test_nanmedian_keepdims(dtype, xp):
    a = sample(np, (4, 5), dtype)
    if a.dtype.kind in "fc":
        a[1, :] = np.nan
        a[2, 1] = np.nan
    return xp.nanmedian(xp.asarray(a), axis=1, keepdims=True)


@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
@numpy_xp_compare()
def test_median_nan_slice(dtype, xp):
    a = np.array([[np.nan, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, np.nan]], dtype)
    return xp.median(xp.asarray(a), axis=1)


def test_median_overwrite_input_reorders():
    a = xp.asarray(np.array([3.0, 1, 2, 5]))
    assert float(xp.median(a, overwrite_input=True)) == 2.5
    np.testing.assert_array_equal(a.get(), [1, 2, 3, 5])


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("adt,qdt", [(np.float32, np.float32), (np.float32, np.float64), (np.int8, np.float32),
                                     (np.int32, np.float32), (np.uint8, np.float64), (np.int64, np.int32)])
@numpy_xp_compare()
def test_quantile_result_dtype(method, adt, qdt, xp):
    q = np.array([0.0, 1.0]) if np.dtype(qdt).kind == "i" else np.array([0.1, 0.5, 0.9])
    return xp.quantile(sample(xp, (3, 8), adt, low=0), xp.asarray(q.astype(qdt)), axis=1, method=method)


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.int32])
@numpy_xp_compare()
def test_percentile_python_float_q(dtype, xp):
    return xp.percentile(sample(xp, (10,), dtype), 37.5)


def test_quantile_errors_and_overwrite():
    a = xp.asarray(np.arange(8.0).reshape(2, 4)[:, ::-1].copy())
    with pytest.raises(ValueError, match="scalar or 1d"):
        xp.quantile(a, xp.zeros((1, 2, 3)), axis=-1)
    with pytest.raises(ValueError, match="not a valid method"):
        xp.quantile(a, 0.5, method="deadbeef")
    with pytest.raises(TypeError, match="real numbers"):
        xp.quantile(a.astype(np.complex64), 0.5)
    before = a.get()
    xp.quantile(a, 0.5, axis=-1, overwrite_input=True)
    assert not np.array_equal(a.get(), before)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64, np.complex64, np.float16])
@pytest.mark.parametrize("kw", [{}, {"fweights": (1, 4, 1)}, {"aweights": (1.0, 4.0, 1.0)},
                                {"bias": True, "aweights": (1.0, 4.0, 1.0)}, {"ddof": 2}, {"rowvar": False}])
@numpy_xp_compare()
def test_cov(dtype, kw, xp):
    kw = {k: (xp.asarray(v) if isinstance(v, tuple) else v) for k, v in kw.items()}
    return xp.cov(xp.asarray(np.arange(6).reshape(2, 3).astype(dtype)), **kw)


@pytest.mark.parametrize("m_shape,y_shape,rowvar", [((1, 3), (1, 3), False), ((2, 3), (2, 3), False),
                                                   ((2,), (2,), True)])
@numpy_xp_compare(accept_error=True)      # the first raises NumPy's ValueError (m transposed by its ndim)
def test_cov_with_y(m_shape, y_shape, rowvar, xp):
    m = np.arange(np.prod(m_shape), dtype=float).reshape(m_shape)
    return xp.cov(xp.asarray(m), xp.asarray(m[::-1] * 2 + 1), rowvar)


def test_cov_errors_warnings_and_empty():
    with pytest.raises(TypeError):     # centring in place cannot store floats into int8 (NumPy's casting error)
        xp.cov(xp.arange(6, dtype=np.int8).reshape(2, 3), dtype=np.int8)
    with pytest.raises(ValueError, match="ddof must be integer"):
        xp.cov(xp.ones((2, 3)), ddof=1.2)
    with pytest.raises(ValueError, match="more than 2"):
        xp.cov(xp.ones((3, 4, 2)))
    with pytest.warns(RuntimeWarning, match="Degrees of freedom"):
        xp.cov(xp.ones((2, 3)), ddof=3)
    e = xp.cov(xp.zeros((0, 1), dtype=np.float32))
    assert e.shape == (0, 0) and e.dtype == np.float64


@pytest.mark.parametrize("bins", [[1.0, 3, 5, 8, np.nan], [1.0, 3, 5, 8, np.nan, np.nan], [np.nan, 8, 5, 3, 1],
                                  [np.nan, np.nan, 5, 3, 1], [np.nan, np.nan], [1.0, 1.0]])
@pytest.mark.parametrize("right", [False, True])
@numpy_xp_compare()
def test_digitize_nan_bins(bins, right, xp):
    x = np.concatenate([np.arange(14, dtype=np.float32), [np.nan, np.inf]]).astype(np.float32)
    return xp.digitize(xp.asarray(x), xp.asarray(np.array(bins, np.float32)), right=right)


def test_digitize_and_histogram_errors():
    with pytest.raises(TypeError, match="complex"):
        xp.digitize(xp.arange(3).astype(complex), xp.asarray(np.array([1.0, 2.0], complex)))
    with pytest.raises(ValueError):
        xp.histogram(xp.arange(10), range=[1, 9, 15])
    with pytest.raises(ValueError, match="monotonically"):
        xp.histogram(xp.arange(10, dtype=np.uint8), xp.asarray(np.array([1, 3, 2], np.uint8)))
    with pytest.raises(ValueError, match="same length"):
        xp.bincount(xp.arange(1), weights=xp.arange(2))


@pytest.mark.parametrize("fn", ["nanmean", "nanvar", "nanstd"])
def test_nan_stats_out(fn):
    a = sample(np, (3, 4), np.float32)
    a[0, 1] = np.nan
    out = xp.zeros(4, dtype=np.float32)
    r = getattr(xp, fn)(xp.asarray(a), axis=0, out=out)
    assert r is out
    np.testing.assert_allclose(out.get(), getattr(np, fn)(a, axis=0), rtol=1e-6)


@numpy_xp_compare()
def test_average_keepdims_weights(xp):
    return xp.average(sample(xp, (2, 3), np.float64), axis=1, weights=sample(xp, (2, 3), np.float64, seed=1, low=0),
                      keepdims=True)


def test_nanmax_all_nan_warns_once():
    for dt in (np.float32, np.complex64):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            r = xp.nanmax(xp.asarray(np.array([np.nan, np.nan], dt)))
        assert len(w) == 1 and w[0].category is RuntimeWarning
        assert np.isnan(r.get())


def test_bincount_uint64_above_int64_is_negative_as_numpy():
    with pytest.raises(ValueError, match="no negative elements"):
        xp.bincount(xp.array([2**63 + 1], dtype=xp.uint64))
    np.testing.assert_array_equal(xp.asnumpy(xp.bincount(xp.array([1, 3], dtype=xp.uint64))), [0, 1, 0, 1])


@pytest.mark.parametrize("fn", ["percentile", "nanpercentile", "median", "quantile"])
def test_quantiles_of_empty_rows(fn):
    args = {"percentile": (50,), "nanpercentile": (50,), "quantile": (0.5,), "median": ()}[fn]
    expected = getattr(np, fn)(np.zeros((0, 3)), *args, axis=1)
    got = getattr(xp, fn)(xp.zeros((0, 3)), *args, axis=1)
    assert got.shape == expected.shape and got.dtype == expected.dtype


@pytest.mark.parametrize("fn", ["var", "std"])
def test_float16_variance_accumulates_as_numpy(fn):
    # NumPy sums float16 squares in float16 (inf for 100k standard normals); PyTorch's kernel in float32
    a = np.random.default_rng(3).standard_normal(100_000).astype(np.float16)
    with np.errstate(over="ignore"):
        expected = getattr(a, fn)()
    x = xp.asarray(a)
    for got in (getattr(x, fn)(), getattr(xp, fn)(x)):
        assert got.dtype == expected.dtype
        np.testing.assert_array_equal(xp.asnumpy(got), expected)
