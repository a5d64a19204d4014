"""searchsorted of complex arrays (NumPy's lexicographic order) and sort_complex."""
import numpy as np
import pytest

import npudist.xp as xp


@pytest.mark.parametrize("side", ["left", "right"])
def test_complex_searchsorted(side):
    a = np.sort(np.array([1 + 2j, 1 + 1j, 0, 3, np.nan, 2 - 1j, 1 + 1j]))
    v = np.array([1 + 1j, 1 + 1.5j, 2, 5, -1, 1 + 2j])
    np.testing.assert_array_equal(xp.searchsorted(a, v, side).get(), np.searchsorted(a, v, side))
    order = np.argsort(a)[::-1].copy()
    b = a[order]
    np.testing.assert_array_equal(xp.searchsorted(b, v, side, sorter=order).get(), np.searchsorted(b, v, side, sorter=order))


def test_sort_complex():
    for x in (np.array([3, 1, 2.0]), np.array([3, 1], np.float32), np.array([2 + 1j, 1 + 5j, 2 - 1j]), np.arange(3)):
        got, want = xp.sort_complex(x).get(), np.sort_complex(x)
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)


def test_set_routines_of_bool_and_complex():
    for a, b in [(np.array([True, False]), np.array([True])), (np.array([1 + 1j, 2, 3j]), np.array([3j, 2]))]:
        np.testing.assert_array_equal(xp.isin(a, b).get(), np.isin(a, b))
        for f in ("intersect1d", "setdiff1d", "union1d"):
            got, want = getattr(xp, f)(a, b).get(), getattr(np, f)(a, b)
            assert got.dtype == want.dtype
            np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("shape,axis", [((0,), 0), ((3, 0, 2), 2), ((3, 0, 2), 0), ((0, 3), 1)])
def test_unique_axis_of_empty_slices(shape, axis):
    """Empty slices along axis are all equal: NumPy returns one of them (or none when there are none)."""
    want = np.unique(np.empty(shape), return_index=True, return_inverse=True, return_counts=True, axis=axis)
    got = xp.unique(xp.empty(shape), return_index=True, return_inverse=True, return_counts=True, axis=axis)
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype
        np.testing.assert_array_equal(g.get(), w)
def test_complex_sort_with_nans_numpy_order():
    # NumPy's order: R + Rj, R + nanj, nan + Rj, nan + nanj
    a = np.array([0, 3, 0, 1 + 2j, 0, 0, 1 + 1j, -5 + 3j])
    a.real[[0, 2, 5]] = np.nan
    a.imag[[0, 1, 4]] = np.nan
    a.real[4] = 0
    e, g = np.sort(a), xp.sort(xp.asarray(a)).get()
    np.testing.assert_array_equal(g.real, e.real)
    np.testing.assert_array_equal(g.imag, e.imag)


@pytest.mark.parametrize("side", ["left", "right"])
@pytest.mark.parametrize("bins", [[0, 1, 2, 4, np.nan], [0, 1, np.nan, np.nan, np.nan], [np.nan] * 5])
def test_searchsorted_nan_bins(side, bins):
    x = np.array([0, 1, 2, 3, 5, np.nan, np.inf, -np.inf, 4, 10])
    for dt in (np.float16, np.float32, np.float64):
        b = np.array(bins, dt)
        np.testing.assert_array_equal(xp.searchsorted(xp.asarray(b), xp.asarray(x.astype(dt)), side).get(),
                                      np.searchsorted(b, x.astype(dt), side))


def test_searchsorted_sorter_errors_and_zero_dim_sorts():
    for m in (np, xp):
        bins = m.asarray(np.array([10, 4, 2, 1, 8]))
        with pytest.raises(ValueError):
            m.searchsorted(bins, m.arange(3), sorter=m.asarray(np.array([0])))
        with pytest.raises(TypeError):
            m.searchsorted(bins, m.arange(3), sorter=m.asarray(np.array([], dtype=np.float64)))
    for axis in (-1, 0):
        assert xp.argsort(xp.asarray(np.array(3.0)), axis=axis).get().tolist() == [0]
    r = xp.lexsort(xp.asarray(np.array([1, 2, 3])))
    assert r.ndim == 0 and int(r) == 0 and r.dtype == np.int64


@pytest.mark.parametrize("dtype", ["bool", "int8", "uint32", "float32", "complex64"])
@pytest.mark.parametrize("assume_unique", [False, True])
def test_intersect1d_setxor1d_every_dtype_like_numpy(dtype, assume_unique):
    rng = np.random.default_rng(1)
    if assume_unique:
        a, b = np.array([3, 0, 2, 5]), np.array([5, 1, 3])
    else:
        a, b = rng.integers(0, 4, 10), rng.integers(0, 4, 7)
    a = (a + 1j * (a % 2) if dtype == "complex64" else a).astype(dtype)
    b = b.astype(dtype)
    if dtype == "bool" and assume_unique:
        a, b = np.array([True, False]), np.array([True])
    want = np.intersect1d(a, b, assume_unique=assume_unique, return_indices=True)
    got = xp.intersect1d(xp.asarray(a), xp.asarray(b), assume_unique=assume_unique, return_indices=True)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype
        np.testing.assert_array_equal(xp.asnumpy(g), w)
    w = np.setxor1d(a, b, assume_unique=assume_unique)
    g = xp.setxor1d(xp.asarray(a), xp.asarray(b), assume_unique=assume_unique)
    assert g.dtype == w.dtype
    np.testing.assert_array_equal(xp.asnumpy(g), w)


def test_setxor1d_intersect1d_nan_and_empty_like_numpy():
    a, b = np.array([3.0, np.nan, 1]), np.array([np.nan, 1.0, 5])
    np.testing.assert_array_equal(xp.asnumpy(xp.setxor1d(xp.asarray(a), xp.asarray(b))), np.setxor1d(a, b))
    np.testing.assert_array_equal(xp.asnumpy(xp.intersect1d(xp.asarray(a), xp.asarray(b))), np.intersect1d(a, b))
    got = xp.intersect1d(xp.asarray([]), xp.asarray([1j]), return_indices=True)
    assert [g.dtype for g in got] == [np.complex128, np.int64, np.int64] and got[0].size == 0


@pytest.mark.parametrize("fn", ["sort", "argsort"])
@pytest.mark.parametrize("n", [3, 10_000])
def test_sort_kind_checked_as_numpy(fn, n):
    a = xp.arange(n)[::-1].copy()
    for kind in ("quicksort", "Q", "heapsort", "mergesort", "stable"):
        getattr(xp, fn)(a, kind=kind)
    for kind in ("bogus", ""):
        with pytest.raises(ValueError, match="sort kind must be one of"):
            getattr(xp, fn)(a, kind=kind)
