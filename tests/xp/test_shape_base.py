"""xp.apply_along_axis, xp.apply_over_axes and put_along_axis's checks equal NumPy's."""
import numpy as np
import pytest

import npudist.xp as nxp
from tests.xp.compare import ALL_DTYPES, numpy_xp_compare, sample

DTYPES = ALL_DTYPES + [np.uint16, np.uint32, np.uint64]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("axis", [0, 1, -1])
@numpy_xp_compare()
def test_apply_along_axis(dtype, axis, xp):
    a = sample(xp, (3, 4, 2), dtype)
    return (xp.apply_along_axis(xp.sum, axis, a), xp.apply_along_axis(lambda v: v[::-1] * v[:, None], axis, a),
            xp.apply_along_axis(lambda v, k: (v.max(), v.min() * k), axis, a, 2), xp.apply_along_axis(len, axis, a))


@pytest.mark.parametrize("axis", [0, 1])
def test_apply_along_axis_errors(axis):
    for xp in (np, nxp):
        with pytest.raises(ValueError, match="iteration dimensions are 0"):
            xp.apply_along_axis(lambda v: 1, axis, xp.empty((0, 0)))
        with pytest.raises(np.exceptions.AxisError):
            xp.apply_along_axis(xp.sum, 2, xp.ones((8, 4)))
        shape = [10, 10]
        shape[axis] = 0
        np.testing.assert_array_equal(xp.asnumpy(xp.apply_along_axis(lambda v: 1, axis, xp.empty(shape)))
                                      if xp is nxp else xp.apply_along_axis(lambda v: 1, axis, xp.empty(shape)),
                                      np.ones(10))


@pytest.mark.parametrize("dtype", [np.int32, np.float32, np.complex64, np.uint64])
@numpy_xp_compare()
def test_apply_over_axes(dtype, xp):
    a = sample(xp, (2, 3, 4), dtype)
    return (xp.apply_over_axes(xp.sum, a, [0, 2]), xp.apply_over_axes(xp.max, a, -1),
            xp.apply_over_axes(lambda v, ax: v - v.min(axis=ax, keepdims=True), a, (1,)))


def test_apply_over_axes_errors():
    for xp in (np, nxp):
        with pytest.raises(np.exceptions.AxisError):
            xp.apply_over_axes(xp.sum, xp.ones((8, 4)), 3)
        with pytest.raises(ValueError, match="correct shape"):
            xp.apply_over_axes(lambda v, ax: v.sum(), xp.ones((8, 4, 2)), 0)


@pytest.mark.parametrize("dtype", DTYPES)
@numpy_xp_compare()
def test_put_along_axis_broadcasts_indices(dtype, xp):
    a = sample(xp, (3, 4), dtype)
    xp.put_along_axis(a, xp.array([[1]]), xp.array([[0]], dtype), axis=0)
    b = sample(xp, (3, 4), dtype)
    xp.put_along_axis(b, xp.array([1, 5]), xp.array([1, 0], dtype), axis=None)
    return a, b


def test_put_along_axis_errors():
    for xp in (np, nxp):
        a = xp.zeros((3, 3, 3))
        with pytest.raises(ValueError, match="same number of dimensions"):
            xp.put_along_axis(a, xp.zeros((3, 3), dtype=np.int64), -99, axis=1)
        with pytest.raises(ValueError, match="single dimension"):
            xp.put_along_axis(a, xp.zeros((3, 3), dtype=np.int64), -99, axis=None)


@pytest.mark.parametrize("dt1", DTYPES)
@pytest.mark.parametrize("dt2", [np.int8, np.float16, np.float32, np.complex64])
@numpy_xp_compare(accept_error=True)
def test_common_type(dt1, dt2, xp):
    a, b = xp.zeros(3, dt1), xp.zeros(2, dt2)
    return xp.dtype(xp.common_type(a, b)), xp.dtype(xp.common_type(a)), xp.dtype(xp.common_type())


@pytest.mark.parametrize("value", [0, 300, -5, 2.5, 1e300, 1j])
def test_min_scalar_type(value):
    assert nxp.min_scalar_type(nxp.asarray(value)) == np.min_scalar_type(np.asarray(value))
    assert nxp.min_scalar_type(nxp.asarray([value])) == np.min_scalar_type(np.asarray([value]))
    assert nxp.min_scalar_type(value) == np.min_scalar_type(value)
