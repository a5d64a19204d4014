"""npudist.xp.fft (matches numpy.fft, NumPy 2 precision rules: float32 -> complex64,
other real inputs -> complex128; norm 'backward' / 'ortho' / 'forward'; ``out=`` is honoured with
NumPy's same_kind casting)."""
import operator

import numpy as np
import torch

from ._core import check_same_kind, f64, ndarray, normalize_axis, tensor_of, wrap
from ._creation import npu_device
from ._dtypes import NP_TO_TORCH, TORCH_TO_NP, to_dtype


def _t(a, real_ok=True):
    t = tensor_of(a)
    if t.dtype in (torch.float16, torch.float32):
        return t.to(torch.float32)
    if t.dtype == torch.complex64 or t.dtype == torch.complex128 or t.dtype == torch.float64:
        return t
    return t.to(torch.float64)


def _norm(norm):
    if norm not in (None, "backward", "ortho", "forward"):
        raise ValueError(f'Invalid norm value {norm}; should be "backward", "ortho" or "forward".')
    return norm or "backward"


def _done(res, out):
    """The result array, or res written into out (NumPy's same_kind casting; shape must match)."""
    if out is None:
        return wrap(res)
    if not isinstance(out, ndarray):
        raise TypeError(f"out must be an xp.ndarray, got {type(out).__name__}")
    if tuple(out.shape) != tuple(res.shape):
        raise ValueError(f"out has shape {out.shape}, the transform has {tuple(res.shape)}")
    check_same_kind(TORCH_TO_NP[res.dtype], out.dtype)
    out._t.copy_(res)
    return out


def _bad_points(n):
    return ValueError(f"Invalid number of FFT data points ({n}) specified.")


def _run(fn, t, **kwargs):
    """fn on t; an empty batch (a zero-length axis that is not transformed) gives an empty result
    of the right shape, as NumPy does, where PyTorch's FFT backends refuse it."""
    if t.numel() == 0:
        shape = fn(torch.empty(t.shape, dtype=t.dtype, device="meta"), **kwargs).shape
        dt = t.dtype if t.is_complex() or fn in _C2R else (torch.complex64 if t.dtype == torch.float32
                                                           else torch.complex128)
        if fn in _C2R:
            dt = torch.float32 if t.dtype == torch.complex64 else torch.float64
        return torch.zeros(shape, dtype=dt, device=t.device)
    return f64(fn, t, **kwargs)


def _one(fn, a, n, axis, norm, complex_in=False, out=None):
    t = _t(a)
    # NumPy 2's irfft/hfft of float16 input compute in float32 and return float16
    half = complex_in and isinstance(a, ndarray) and a._t.dtype == torch.float16
    if complex_in and not t.is_complex():
        t = t.to(torch.complex64 if t.dtype == torch.float32 else torch.complex128)
    axis = normalize_axis(axis, t.ndim)
    if n is not None:
        n = operator.index(n)
    m = n if n is not None else (2 * (t.shape[axis] - 1) if fn in _C2R else t.shape[axis])
    if m < 1:
        raise _bad_points(m)
    res = _run(fn, t, n=n, dim=axis, norm=_norm(norm))
    return _done(res.to(torch.float16) if half else res, out)


def _many(fn, a, s, axes, norm, default_axes=None, out=None):
    if axes is not None and len(axes) == 0 and s is None:
        if fn in (torch.fft.rfftn, torch.fft.irfftn):   # NumPy's real transforms need a last axis
            raise IndexError("rfftn/irfftn need at least one axis (axes=() given)")
        return a if isinstance(a, ndarray) else wrap(tensor_of(a))   # NumPy: no axes, no transform
    # NumPy 2's irfftn over one axis is irfft: float16 input gives float16 (over more axes the
    # complex passes first promote to complex64)
    half = fn is torch.fft.irfftn and isinstance(a, ndarray) and a._t.dtype == torch.float16 and \
        axes is not None and len(axes) == 1
    t = _t(a)
    if fn in _C2R and not t.is_complex():
        t = t.to(torch.complex64 if t.dtype == torch.float32 else torch.complex128)
    if axes is None and s is None and default_axes is not None:
        axes = default_axes
    if s is not None and axes is not None and len(s) != len(axes):
        raise ValueError("Shape and axes have different lengths.")
    if axes is None:
        axes = tuple(range(t.ndim - (len(s) if s is not None else t.ndim), t.ndim))
    axes = tuple(normalize_axis(ax, t.ndim) for ax in axes)
    if s is not None:
        s = tuple(operator.index(x) for x in s)
        lengths = list(s)
    else:
        lengths = [t.shape[ax] for ax in axes]
        if fn in _C2R and axes:
            lengths[-1] = 2 * (lengths[-1] - 1)
    for m in lengths:
        if m < 1:
            raise _bad_points(m)
    kwargs = {"norm": _norm(norm), "dim": axes}
    if s is not None:
        kwargs["s"] = s
    res = _run(fn, t, **kwargs)
    return _done(res.to(torch.float16) if half else res, out)


def fft(a, n=None, axis=-1, norm=None, out=None):
    """1-D discrete Fourier transform (matches numpy.fft.fft)."""
    return _one(torch.fft.fft, a, n, axis, norm, out=out)


def ifft(a, n=None, axis=-1, norm=None, out=None):
    return _one(torch.fft.ifft, a, n, axis, norm, out=out)


def rfft(a, n=None, axis=-1, norm=None, out=None):
    """FFT of real input, non-negative frequencies (matches numpy.fft.rfft)."""
    t = _t(a)
    if t.is_complex():
        raise TypeError("rfft needs real input (numpy.fft.rfft discards the imaginary part with a warning; "
                        "pass a.real explicitly)")
    return _one(torch.fft.rfft, wrap(t), n, axis, norm, out=out)


def irfft(a, n=None, axis=-1, norm=None, out=None):
    return _one(torch.fft.irfft, a, n, axis, norm, complex_in=True, out=out)


def hfft(a, n=None, axis=-1, norm=None, out=None):
    return _one(torch.fft.hfft, a, n, axis, norm, complex_in=True, out=out)


def ihfft(a, n=None, axis=-1, norm=None, out=None):
    return _one(torch.fft.ihfft, a, n, axis, norm, out=out)


def fft2(a, s=None, axes=(-2, -1), norm=None, out=None):
    return _many(torch.fft.fftn, a, s, axes, norm, out=out)


def ifft2(a, s=None, axes=(-2, -1), norm=None, out=None):
    return _many(torch.fft.ifftn, a, s, axes, norm, out=out)


def fftn(a, s=None, axes=None, norm=None, out=None):
    """N-D FFT over axes (matches numpy.fft.fftn)."""
    return _many(torch.fft.fftn, a, s, axes, norm, out=out)


def ifftn(a, s=None, axes=None, norm=None, out=None):
    return _many(torch.fft.ifftn, a, s, axes, norm, out=out)


def rfft2(a, s=None, axes=(-2, -1), norm=None, out=None):
    return _many(torch.fft.rfftn, a, s, axes, norm, out=out)


def irfft2(a, s=None, axes=(-2, -1), norm=None, out=None):
    return _many(torch.fft.irfftn, a, s, axes, norm, out=out)


def rfftn(a, s=None, axes=None, norm=None, out=None):
    return _many(torch.fft.rfftn, a, s, axes, norm, out=out)


def irfftn(a, s=None, axes=None, norm=None, out=None):
    return _many(torch.fft.irfftn, a, s, axes, norm, out=out)


def _freq_dtype(dtype):
    return torch.float64 if dtype is None else NP_TO_TORCH[to_dtype(dtype)]


def fftfreq(n, d=1.0, *, device=None, dtype=None):
    """Sample frequencies (matches numpy.fft.fftfreq; float64 unless dtype is given)."""
    if n < 1:
        raise ValueError(f"n must be positive, got {n}")
    return wrap(torch.fft.fftfreq(n, d, dtype=torch.float64, device=npu_device(device)).to(_freq_dtype(dtype)))


def rfftfreq(n, d=1.0, *, device=None, dtype=None):
    if n < 1:
        raise ValueError(f"n must be positive, got {n}")
    return wrap(torch.fft.rfftfreq(n, d, dtype=torch.float64, device=npu_device(device)).to(_freq_dtype(dtype)))


def fftshift(x, axes=None):
    """Zero frequency to the centre (matches numpy.fft.fftshift)."""
    t = tensor_of(x)
    return wrap(torch.fft.fftshift(t, dim=axes if axes is None or isinstance(axes, int) else tuple(axes)))


def ifftshift(x, axes=None):
    t = tensor_of(x)
    return wrap(torch.fft.ifftshift(t, dim=axes if axes is None or isinstance(axes, int) else tuple(axes)))


_C2R = {torch.fft.irfft, torch.fft.hfft, torch.fft.irfftn, torch.fft.irfft2}

del np
