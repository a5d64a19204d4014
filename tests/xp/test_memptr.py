"""xp.ndarray(shape, dtype, memptr=a.data, strides=...) as cupy.ndarray's constructor: views of npu memory."""
import numpy as np
import pytest

import npudist.xp as nxp


@pytest.mark.parametrize("dtype", [np.int8, np.uint16, np.float32, np.uint64, np.complex128])
def test_view_of_memory_matches_numpy_as_strided(dtype):
    h = np.arange(24).astype(dtype)
    a = nxp.asarray(h)
    for shape, strides, start in [((2, 3), None, 0), ((3, 4), (2 * h.itemsize, h.itemsize), 2),
                                  ((4, 2), (h.itemsize, 0), 5)]:
        v = nxp.ndarray(shape, dtype, memptr=a[start:].data, strides=strides)
        e = np.lib.stride_tricks.as_strided(h[start:], shape, strides if strides else None)
        assert v.dtype == e.dtype and v.shape == e.shape and v.strides == e.strides
        np.testing.assert_array_equal(v.get(), e)
    w = nxp.ndarray((2, 3), dtype, a.data, (h.itemsize, 2 * h.itemsize))   # CuPy's positional order
    assert w.strides == (h.itemsize, 2 * h.itemsize)
    w[1, 0] = 7
    assert a[1].item() == 7                 # writes go through to a's memory


def test_order_f_and_memory_pool_block():
    block = nxp.get_default_memory_pool().malloc(64)
    f = nxp.ndarray((2, 4), np.float32, memptr=block, order="F")
    assert f.strides == (4, 8) and f.flags.f_contiguous
    f[...] = 1.5
    assert float(f.sum()) == 12.0


def test_errors():
    a = nxp.arange(6, dtype=np.float32)
    with pytest.raises(ValueError, match="reaches byte 28 of a 24-byte"):
        nxp.ndarray((7,), np.float32, memptr=a.data)
    with pytest.raises(ValueError, match="multiples of the item size"):
        nxp.ndarray((2,), np.float32, memptr=a.data, strides=(6,))
    with pytest.raises(NotImplementedError):
        nxp.ndarray((2,), np.float32, memptr=a[3:].data, strides=(-4,))
    with pytest.raises(TypeError, match="MemoryPointer"):
        nxp.ndarray((2,), np.float32, memptr=12345)
    with pytest.raises(NotImplementedError):
        nxp.ndarray((2,), np.float32, buffer=b"12345678")
