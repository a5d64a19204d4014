"""Creation routines against NumPy: shape/arange/linspace edge cases and zero-size strides."""
import sys

import numpy as np
import pytest

import npudist.xp as xp


def _same(got, want):
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got.get(), want)


@pytest.mark.parametrize("name", ["empty", "zeros", "ones"])
def test_none_shape_raises_typeerror(name):
    for m in (np, xp):
        with pytest.raises(TypeError, match=r"Use \(\)"):
            getattr(m, name)(None)


def test_arange_bool_length():
    for args in ((2,), (0, 2), (1, 2)):
        _same(xp.arange(*args, dtype=bool), np.arange(*args, dtype=bool))
    for m in (np, xp):
        with pytest.raises(TypeError):
            m.arange(10, dtype=m.bool_)


def test_linspace_step_underflow():
    x = sys.float_info.min
    while x / 2 > 0:
        x /= 2
    _same(xp.linspace(0.0, x, 10, dtype=float), np.linspace(0.0, x, 10, dtype=float))
    _same(xp.linspace(0.0, 1.0, 7), np.linspace(0.0, 1.0, 7))


@pytest.mark.parametrize("order", ["C", "F"])
def test_zero_size_strides(order):
    for shape in ((1, 0, 2), (0, 3), (0,)):
        for f in (lambda m: m.empty(shape, "d", order=order), lambda m: m.zeros(shape, order=order),
                  lambda m: m.full(shape, 2, order=order), lambda m: m.empty_like(m.ones((2, 3))[:0], order=order)):
            got, want = f(xp), f(np)
            assert got.strides == want.strides and got.flags.c_contiguous == want.flags.c_contiguous


@pytest.mark.parametrize("order", ["C", "F", "A", "K"])
def test_like_and_copy_keep_axis_order(order):
    a = np.arange(24.0).reshape(2, 3, 4)[:, ::2, :].swapaxes(0, 1)     # neither C nor F, strides unsorted
    x = xp.arange(24.0).reshape(2, 3, 4)[:, ::2, :].swapaxes(0, 1)
    for f in (lambda m, v: m.empty_like(v, order=order), lambda m, v: m.copy(v, order=order),
              lambda m, v: v.copy(order=order), lambda m, v: m.array(v, order=order)):
        assert f(xp, x).strides == f(np, a).strides
    c = xp.array(x, order=order)
    c[0] = -1
    assert float(x[0, 0, 0]) != -1                                   # a copy, not a view
