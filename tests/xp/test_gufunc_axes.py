"""xp.matmul's ``axes=`` errors as NumPy's gufunc machinery raises them (CuPy core_tests/test_gufuncs.py)."""
import numpy as np
import pytest

import npudist.xp as xp

_BAD_AXES = [[0, 0, ()], [(0,), (0,), ()], [(0, 1, 2)] * 2 + [()], [[(0, 1)]] * 3, [(0, 1), (0, 1), (0,)],
             [(0, 5), (0, 1), (0, 1)], [(-1,), (-1,), ()]]


@pytest.mark.parametrize("axes", _BAD_AXES, ids=str)
def test_matmul_bad_axes_raise_numpys_error(axes):
    with pytest.raises(Exception) as np_err:
        np.matmul(np.ones((3, 3)), np.ones((3, 3)), axes=axes)
    with pytest.raises(np_err.type) as xp_err:
        xp.matmul(xp.ones((3, 3)), xp.ones((3, 3)), axes=axes)
    assert str(xp_err.value) == str(np_err.value)


def test_matmul_good_axes_still_work():
    n = np.arange(9.).reshape(3, 3)
    r = xp.matmul(xp.asarray(n), xp.asarray(n), axes=[(1, 0), (0, 1), (0, 1)])
    np.testing.assert_array_equal(xp.asnumpy(r), np.matmul(n, n, axes=[(1, 0), (0, 1), (0, 1)]))
    v = np.arange(3.)
    assert float(xp.matmul(xp.asarray(v), xp.asarray(v), axes=[0, 0, ()])) == np.matmul(v, v, axes=[0, 0, ()])
