"""npudist/xp/_manipulation/ against NumPy: shapes (reshape, ravel), joining, tiling, rearranging,
dims, basic (copyto), add/remove; results, strides/views and NumPy's exception types."""
import warnings

import numpy as np
import pytest

import npudist.xp as xp


def _same(got, want):
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got.get(), want)


def _raises_like(fn):
    """fn(np) raises; fn(xp) raises the same exception type."""
    with pytest.raises(Exception) as want:
        fn(np)
    with pytest.raises(want.type):
        fn(xp)


# -- shape ------------------------------------------------------------------------------------

@pytest.mark.parametrize("bad", [
    lambda m: m.zeros((2, 3, 4)).reshape(2, 4, 4, order="K"),
    lambda m: m.zeros((2, 3, 4)).reshape(4, 3, 2, copy="False"),
    lambda m: m.zeros((2, 3, 4)).reshape(3, -1, -1),
    lambda m: m.zeros((2, 3, 4)).transpose(2, 0, 1).reshape(4, 3, 2, order="F", copy=False),
    lambda m: m.zeros((2, 3, 4)).reshape(2, 4, 4),
    lambda m: m.ones(65).reshape([1] * 64 + [65]),
    lambda m: m.zeros((0,)).reshape((-1, 0)),
])
def test_reshape_errors(bad):
    _raises_like(bad)


@pytest.mark.parametrize("order", ["C", "F", "A"])
def test_reshape_views_and_zero_size(order):
    for shape in ((2, 0, 3), (0,)):
        a, x = np.zeros(shape), xp.zeros(shape)
        new = (5, 0, 4) if len(shape) == 3 else (0,)
        b, y = a.reshape(new, order=order), x.reshape(new, order=order)
        assert y.strides == b.strides and y.base is x
    a, x = np.arange(24.0).reshape(2, 3, 4), xp.arange(24.0).reshape(2, 3, 4)
    y = x.reshape(4, 6, order=order)
    _same(y, a.reshape(4, 6, order=order))
    _same(x.reshape(-2, 12), a.reshape(-2, 12))
    z = x.reshape(4, 6, copy=True)
    z[0, 0] = 99
    assert float(x[0, 0, 0]) == 0


@pytest.mark.parametrize("order", ["C", "F", "A", "K"])
def test_ravel_orders(order):
    a = np.arange(1.0, 25.0).reshape(2, 3, 4)
    x = xp.arange(1.0, 25.0).reshape(2, 3, 4)
    cases = [(a.transpose(2, 0, 1), x.transpose(2, 0, 1)),
             (np.asfortranarray(a), xp.asfortranarray(x)),
             (a.transpose(0, 2, 1)[:, ::2], x.transpose(0, 2, 1)[:, ::2]),
             (np.broadcast_to(np.arange(2.0).reshape(2, 1), (3, 2, 4)),
              xp.broadcast_to(xp.arange(2.0).reshape(2, 1), (3, 2, 4))),
             (np.arange(10)[::2], xp.arange(10)[::2])]
    for n, v in cases:
        got = v.ravel(order)
        _same(got, n.ravel(order))
        assert got.flags.c_contiguous


# -- join -------------------------------------------------------------------------------------

@pytest.mark.parametrize("bad", [
    lambda m: m.concatenate((m.ones((3, 4)), m.ones((4, 3)))),
    lambda m: m.concatenate((m.ones((3, 4)),) * 2, out=m.zeros((6, 4), dtype=np.int64)),
    lambda m: m.concatenate((m.ones((3, 4)),) * 2, out=m.zeros((6, 4)), dtype=float),
    lambda m: m.stack((m.ones((3, 4)),) * 3, axis=1, out=m.zeros((3, 3, 4), dtype=np.int64)),
    lambda m: m.column_stack((m.zeros(()), m.zeros(3))),
    lambda m: m.vstack((m.zeros(3), m.zeros((3, 1)))),
])
def test_join_errors(bad):
    _raises_like(bad)


def test_concatenate_out_casts_and_row_stack_warns():
    out_n, out_x = np.zeros((6, 4), np.float32), xp.zeros((6, 4), np.float32)
    np.concatenate((np.ones((3, 4), np.int16),) * 2, out=out_n)
    xp.concatenate((xp.ones((3, 4), np.int16),) * 2, out=out_x)
    _same(out_x, out_n)
    with pytest.warns(DeprecationWarning):
        r = xp.row_stack((xp.ones((2, 3)), xp.zeros(3)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        _same(r, np.row_stack((np.ones((2, 3)), np.zeros(3))))
