"""xp.lib.stride_tricks against numpy.lib.stride_tricks: windows and strided views share the
array's npu memory."""
import numpy as np
import pytest
from numpy.lib import stride_tricks as np_st

import npudist.xp as xp

st = xp.lib.stride_tricks


@pytest.mark.parametrize("window, kw", [((3,), {"axis": 1}), ((2, 3), {}), ((2, 2), {"axis": (0, 0)}),
                                        (2, {"axis": -1}), ((4, 6), {}), ((0,), {"axis": 0})])
@pytest.mark.parametrize("dtype", ["float32", "int64", "uint32", "bool"])
def test_sliding_window_view(window, kw, dtype):
    a = (np.arange(24) % 5).astype(dtype).reshape(4, 6)
    expected = np_st.sliding_window_view(a, window, **kw)
    got = st.sliding_window_view(xp.asarray(a), window, **kw)
    assert got.shape == expected.shape and got.dtype == expected.dtype and got.strides == expected.strides
    np.testing.assert_array_equal(xp.asnumpy(got), expected)


def test_windows_are_views():
    x = xp.arange(10.0)
    w = st.sliding_window_view(x, 3)
    x[1] = 100.0
    assert float(w[0, 1]) == 100.0 and float(w[1, 0]) == 100.0


@pytest.mark.parametrize("window, kw", [((7,), {"axis": 0}), ((-1,), {"axis": 0}), ((2,), {}),
                                        ((2, 2), {"axis": 0})])
def test_sliding_window_errors(window, kw):
    a = np.zeros((4, 6))
    with pytest.raises(ValueError) as expected:
        np_st.sliding_window_view(a, window, **kw)
    with pytest.raises(ValueError, match=str(expected.value).replace("(", r"\(").replace(")", r"\)")
                       .replace("`", ".")):
        st.sliding_window_view(xp.asarray(a), window, **kw)


def test_as_strided():
    a = np.arange(24.0).reshape(4, 6)
    x = xp.asarray(a)
    for shape, strides in [((3, 3), (48, 8)), ((4, 2), (48, 16)), ((5, 2), (0, 8))]:
        np.testing.assert_array_equal(xp.asnumpy(st.as_strided(x, shape, strides)), np_st.as_strided(a, shape, strides))
    np.testing.assert_array_equal(xp.asnumpy(st.as_strided(x[1:, 2:], (2, 2), (48, 8))), a[1:3, 2:4])
    with pytest.raises(ValueError, match="multiples of the itemsize"):
        st.as_strided(x, (2,), (3,))
    with pytest.raises(NotImplementedError, match="negative strides"):
        st.as_strided(x[::-1], (2,), (8,))
    assert st.broadcast_shapes((3, 1), (4,)) == (3, 4)
    assert st.broadcast_to(xp.arange(3), (2, 3)).shape == (2, 3)
