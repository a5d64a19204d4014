"""mgrid, ogrid, vander, broadcast; fill_diagonal, putmask, diag_indices_from; histogramdd/2d."""
import numpy as np
import pytest

import npudist.xp as xp


def test_grids_and_vander():
    for key in ((slice(0, 3), slice(0, 2)), (slice(0, 1, 5j), slice(-1, 1, 0.5))):
        np.testing.assert_array_equal(xp.mgrid[key].get(), np.mgrid[key])
        assert xp.mgrid[key].dtype == np.mgrid[key].dtype
        for u, v in zip(xp.ogrid[key], np.ogrid[key]):
            np.testing.assert_array_equal(u.get(), v)
    for x, kw in (([1, 2, 3], {}), ([2, 3.5], {"N": 4, "increasing": True}), (np.arange(5, dtype=np.int8), {})):
        got, want = xp.vander(x, **kw).get(), np.vander(x, **kw)
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)
    b = xp.broadcast(xp.ones((2, 1)), xp.ones(3))
    assert (b.shape, b.nd, b.size, b.numiter) == ((2, 3), 2, 6, 2)


def test_fill_diagonal_putmask():
    for shape, wrap in (((3, 3), False), ((5, 3), True), ((5, 3), False), ((3, 3, 3), False)):
        a, n = xp.zeros(shape), np.zeros(shape)
        xp.fill_diagonal(a, [4, 5], wrap=wrap)
        np.fill_diagonal(n, [4, 5], wrap=wrap)
        np.testing.assert_array_equal(a.get(), n)
    a, n = xp.arange(9).reshape(3, 3), np.arange(9).reshape(3, 3)
    xp.putmask(a, a % 2 == 0, [-1, -2])
    np.putmask(n, n % 2 == 0, [-1, -2])
    np.testing.assert_array_equal(a.get(), n)
    assert [i.get().tolist() for i in xp.diag_indices_from(a)] == [i.tolist() for i in np.diag_indices_from(n)]
    with pytest.raises(ValueError):
        xp.diag_indices_from(xp.zeros((2, 3)))


def test_histogramdd_histogram2d():
    rng = np.random.default_rng(0)
    s = rng.random((200, 3))
    for kw in ({"bins": 4}, {"bins": (2, 3, 4), "density": True}, {"bins": 3, "range": [(0, .5), (0, 1), (.2, .8)]},
               {"bins": [np.array([0, .3, 1]), 2, 3], "weights": rng.random(200)}):
        h, e = xp.histogramdd(s, **kw)
        h2, e2 = np.histogramdd(s, **kw)
        np.testing.assert_allclose(h.get(), h2)
        for u, v in zip(e, e2):
            np.testing.assert_allclose(u.get(), v)
    h, xe, ye = xp.histogram2d(s[:, 0], s[:, 1], bins=[3, 5])
    h2, xe2, ye2 = np.histogram2d(s[:, 0], s[:, 1], bins=[3, 5])
    np.testing.assert_array_equal(h.get(), h2)
    np.testing.assert_allclose(ye.get(), ye2)


def test_r_c_ix_and_triangle_indices():
    for k in [(slice(0, 3), [4, 5], 7), ("0,2", [1, 2], [3, 4]), (np.array([1, 2]), 0.5), ("1,2,0", [1, 2], [3, 4]),
              (slice(0, 1, 3j), np.array([2.0]))]:
        got, want = xp.r_[k].get(), np.r_[k]
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(xp.c_[np.array([1, 2]), np.array([3, 4])].get(), np.c_[np.array([1, 2]), np.array([3, 4])])
    for u, v in zip(xp.ix_([0, 1], [True, False, True]), np.ix_([0, 1], [True, False, True])):
        np.testing.assert_array_equal(u.get(), v)
    a = np.ones((3, 4))
    for f in ("tril_indices_from", "triu_indices_from"):
        for u, v in zip(getattr(xp, f)(xp.asarray(a), 1), getattr(np, f)(a, 1)):
            np.testing.assert_array_equal(u.get(), v)
    for u, v in zip(xp.mask_indices(3, xp.triu, 1), np.mask_indices(3, np.triu, 1)):
        np.testing.assert_array_equal(u.get(), v)


def _same_grid(got, want):
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want)
        for g, w in zip(got, want):
            _same_grid(g, w)
        return
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got.get(), want)


@pytest.mark.parametrize("name", ["mgrid", "ogrid"])
def test_grids_numpy_algorithm(name):
    x, y = np.zeros(10)[:, None], np.ones(10)[:, None]
    X, Y = xp.asarray(x), xp.asarray(y)
    g, n = getattr(xp, name), getattr(np, name)
    _same_grid(g[0:], n[0:])
    _same_grid(g[-10:10], n[-10:10])
    _same_grid(g[-10:10:10j], n[-10:10:10j])
    _same_grid(g[X:Y:10j], n[x:y:10j])                       # array bounds, complex step
    _same_grid(g[-10:10:10j, -10:10:10j], n[-10:10:10j, -10:10:10j])
    _same_grid(g[X:Y:10j, X:Y:10j], n[x:y:10j, x:y:10j])
    _same_grid(g[0:3, 0:2.5:0.5], n[0:3, 0:2.5:0.5])
    with pytest.raises(TypeError):
        g[1]
