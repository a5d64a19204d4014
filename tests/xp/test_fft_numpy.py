"""xp.fft edge cases CuPy's tests check: zero-length axes, bad lengths / shapes as NumPy's
ValueError, NumPy 2's result dtypes (irfft/hfft of float16 -> float16)."""
import numpy as np
import pytest

import npudist.xp as xp
from tests.xp.compare import numpy_xp_compare


@pytest.mark.parametrize("name,kw", [("fft", dict(axis=0)), ("ifft", dict(axis=-1)), ("rfft", dict(axis=2)),
                                     ("irfft", dict(axis=0)), ("hfft", dict(axis=2)), ("ihfft", dict(axis=0)),
                                     ("fftn", dict(axes=(0, 2))), ("irfftn", dict(axes=(0, 2))),
                                     ("ifft2", dict(s=(3, 4), axes=(0, 2))), ("rfftn", dict(axes=(2, 0)))])
@numpy_xp_compare(rtol=1e-5, atol=1e-6)
def test_empty_batch(name, kw, xp):
    return getattr(xp.fft, name)(xp.asarray(np.ones((10, 0, 10), np.float32)), **kw)


@pytest.mark.parametrize("call", [
    lambda xp: xp.fft.fft(xp.zeros((0, 10)), axis=0), lambda xp: xp.fft.fft(xp.zeros(4), n=0),
    lambda xp: xp.fft.fftn(xp.zeros((3, 3)), s=(2,), axes=(0, 1)), lambda xp: xp.fft.irfft(xp.zeros((1,))),
    lambda xp: xp.fft.fft2(xp.zeros((3, 0))), lambda xp: xp.fft.rfft2(xp.zeros((3, 0))),
    lambda xp: xp.fft.ifftn(xp.zeros((3, 3)), s=(0, 3)),
])
@numpy_xp_compare(accept_error=True)
def test_invalid_lengths(call, xp):
    return call(xp)


@pytest.mark.parametrize("name", ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft", "fftn", "irfftn", "rfft2"])
@pytest.mark.parametrize("dtype", [np.bool_, np.int8, np.uint16, np.int64, np.float16, np.float32, np.float64,
                                   np.complex64])
@numpy_xp_compare(rtol=2e-3, atol=1e-3)
def test_result_dtypes(name, dtype, xp):
    if name in ("rfft", "ihfft", "rfft2") and np.dtype(dtype).kind == "c":
        return xp.zeros(0)
    return getattr(xp.fft, name)(xp.asarray((np.arange(16).reshape(4, 4) % 3).astype(dtype)))


def test_irfftn_one_axis_float16_and_empty_axes():
    a = np.arange(12, dtype=np.float16).reshape(3, 4)
    for name in ("irfft2", "irfftn"):
        e = getattr(np.fft, name)(a, axes=(0,))
        g = getattr(xp.fft, name)(xp.asarray(a), axes=(0,))
        assert g.dtype == e.dtype == np.float16
        np.testing.assert_allclose(g.get().astype(np.float32), e.astype(np.float32), rtol=2e-3, atol=2e-3)
    assert xp.fft.irfft2(xp.asarray(a)).dtype == np.fft.irfft2(a).dtype
    for name in ("rfft2", "irfft2", "rfftn", "irfftn"):
        with pytest.raises(IndexError):
            getattr(np.fft, name)(a.astype(np.float64), axes=())
        with pytest.raises(IndexError):
            getattr(xp.fft, name)(xp.asarray(a.astype(np.float64)), axes=())
