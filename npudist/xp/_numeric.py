"""Numerical routines over arrays: gradient, unwrap, trapezoid, correlate, real_if_close, trim_zeros
(each matches the NumPy function of the same name, algorithm and result dtype included)."""

import numpy as np
import torch

from ._core import OPS, as_tensor, normalize_axes, normalize_axis, wrap
from ._creation import asarray
from ._misc import convolve
from ._reductions import cumsum, diff

absolute, conjugate, mod, subtract = OPS["absolute"], OPS["conjugate"], OPS["remainder"], OPS["subtract"]


def _sl(nd, axis, s):
    key = [slice(None)] * nd
    key[axis] = s
    return tuple(key)


def gradient(f, *varargs, axis=None, edge_order=1):
    """Gradient by second-order central differences inside and first- or second-order one-sided
    differences at the edges (matches numpy.gradient: scalar spacings or coordinate arrays per
    axis, ``axis``, ``edge_order`` 1 or 2; integer input gives float64). Returns one array for one
    axis, else a tuple."""
    t = as_tensor(f)
    nd = t.ndim
    axes = normalize_axes(axis, nd)
    if edge_order not in (1, 2):
        raise ValueError("'edge_order' greater than 2 not supported")
    n = len(varargs)
    if n == 0:
        spacing = [1.0] * len(axes)
    elif n == 1 and np.ndim(_host(varargs[0])) == 0:
        spacing = [varargs[0]] * len(axes)
    elif n == len(axes):
        spacing = list(varargs)
    else:
        raise TypeError("invalid number of arguments")
    if t.dtype in (torch.bool,):
        raise TypeError("numpy boolean subtract, the `-` operator, is not supported")
    otype = t.dtype if (t.is_floating_point() or t.is_complex()) else torch.float64
    ft = t.to(otype)
    outs = []
    for ax, h in zip(axes, spacing):
        N = t.shape[ax]
        if edge_order + 1 > N:
            raise ValueError("Shape of array too small to calculate a numerical gradient, at least "
                             "(edge_order + 1) elements are required.")
        hv = _host(h)
        out = torch.empty_like(ft)
        if np.ndim(hv) == 0:
            h = float(hv)
            if isinstance(hv, (int, float)):
                # NumPy's order of operations, each coefficient a weak Python float cast to the
                # array's dtype first (exact for float16/float32 as NumPy's loops round them)
                def k(v):
                    return torch.tensor(v, dtype=otype, device=ft.device)
            else:
                def k(v):
                    return v
            out[_sl(nd, ax, slice(1, -1))] = (ft[_sl(nd, ax, slice(2, None))] - ft[_sl(nd, ax, slice(None, -2))]) / k(2.0 * h)
            f0, f1, fl, fl1 = (ft[_sl(nd, ax, i)] for i in (0, 1, -1, -2))
            if edge_order == 1:
                out[_sl(nd, ax, 0)] = (f1 - f0) / k(h)
                out[_sl(nd, ax, -1)] = (fl - fl1) / k(h)
            else:
                f2, fl2 = ft[_sl(nd, ax, 2)], ft[_sl(nd, ax, -3)]
                out[_sl(nd, ax, 0)] = k(-1.5 / h) * f0 + k(2. / h) * f1 + k(-0.5 / h) * f2
                out[_sl(nd, ax, -1)] = k(0.5 / h) * fl2 + k(-2. / h) * fl1 + k(1.5 / h) * fl
        else:
            x = np.asarray(hv)
            if x.ndim != 1:
                raise ValueError("distances must be either scalars or 1d")
            if len(x) != N:
                raise ValueError("when 1d, distances must match the length of the corresponding dimension")
            dx = np.diff(x.astype(np.float64) if x.dtype.kind in "biu" else x)
            out = _nonuniform(ft, nd, ax, dx, edge_order).to(otype)
        outs.append(wrap(out))
    return outs[0] if len(outs) == 1 else tuple(outs)


def _nonuniform(ft, nd, ax, dx, edge_order):
    dev = ft.device
    shape = [1] * nd
    w = ft.to(torch.complex128 if ft.is_complex() else torch.float64)

    def col(v):
        s = list(shape)
        s[ax] = -1
        return torch.as_tensor(np.asarray(v, dtype=np.float64), device=dev).reshape(s)
    out = torch.empty_like(w)
    dx1, dx2 = dx[:-1], dx[1:]
    a = -dx2 / (dx1 * (dx1 + dx2))
    b = (dx2 - dx1) / (dx1 * dx2)
    c = dx1 / (dx2 * (dx1 + dx2))
    out[_sl(nd, ax, slice(1, -1))] = (col(a) * w[_sl(nd, ax, slice(None, -2))] + col(b) * w[_sl(nd, ax, slice(1, -1))]
                                      + col(c) * w[_sl(nd, ax, slice(2, None))])
    if edge_order == 1:
        out[_sl(nd, ax, 0)] = (w[_sl(nd, ax, 1)] - w[_sl(nd, ax, 0)]) / float(dx[0])
        out[_sl(nd, ax, -1)] = (w[_sl(nd, ax, -1)] - w[_sl(nd, ax, -2)]) / float(dx[-1])
    else:
        d1, d2 = float(dx[0]), float(dx[1])
        a, b, c = -(2. * d1 + d2) / (d1 * (d1 + d2)), (d1 + d2) / (d1 * d2), -d1 / (d2 * (d1 + d2))
        out[_sl(nd, ax, 0)] = a * w[_sl(nd, ax, 0)] + b * w[_sl(nd, ax, 1)] + c * w[_sl(nd, ax, 2)]
        d1, d2 = float(dx[-2]), float(dx[-1])
        a, b, c = d2 / (d1 * (d1 + d2)), -(d2 + d1) / (d1 * d2), (2. * d2 + d1) / (d2 * (d1 + d2))
        out[_sl(nd, ax, -1)] = a * w[_sl(nd, ax, -3)] + b * w[_sl(nd, ax, -2)] + c * w[_sl(nd, ax, -1)]
    return out


def _host(v):
    return v.get() if hasattr(v, "get") and hasattr(v, "_t") else v


def unwrap(p, discont=None, axis=-1, *, period=2 * np.pi):
    """Unwraps phase jumps larger than discont (default period/2) by adding multiples of period
    (matches numpy.unwrap, integer inputs and periods included)."""
    p = asarray(p)
    nd = p.ndim
    axis = normalize_axis(axis, nd)
    dd = diff(p, axis=axis)
    if discont is None:
        discont = period / 2
    dtype = np.result_type(dd.dtype, period) if not hasattr(period, "_t") else np.result_type(dd.dtype, period.dtype)
    if dtype.kind in "iu":
        interval_high, rem = divmod(period, 2)
        boundary_ambiguous = rem == 0
    else:
        interval_high = period / 2
        boundary_ambiguous = True
    interval_low = -interval_high
    ddmod = mod(subtract(dd, interval_low), period) + interval_low
    if boundary_ambiguous:
        ddmod._t[((ddmod == interval_low) & (dd > 0))._t] = interval_high if not hasattr(interval_high, "_t") \
            else interval_high._t.to(ddmod._t.dtype)
    ph_correct = ddmod - dd
    ph_correct._t[(absolute(dd) < discont)._t] = 0
    up = asarray(p, dtype=dtype).copy()
    sl = _sl(nd, axis, slice(1, None))
    up[sl] = p[sl] + cumsum(ph_correct, axis=axis)
    return up


def trapezoid(y, x=None, dx=1.0, axis=-1):
    """Integral by the trapezoidal rule along axis (matches numpy.trapezoid: sample points x, 1-d
    or of y's shape, or a constant spacing dx)."""
    y = asarray(y)
    nd = y.ndim
    axis = normalize_axis(axis, nd)
    if x is None:
        d = dx
    else:
        x = asarray(x)
        if x.ndim == 1:
            d = diff(x)
            shape = [1] * nd
            shape[axis] = d.shape[0]
            d = d.reshape(shape)
        else:
            d = diff(x, axis=axis)
    s1, s2 = _sl(nd, axis, slice(1, None)), _sl(nd, axis, slice(None, -1))
    return (d * (y[s1] + y[s2]) / 2.0).sum(axis)


def real_if_close(a, tol=100):
    """a.real if every imaginary part is below tol (in machine epsilons when tol > 1), else a
    (matches numpy.real_if_close)."""
    a = asarray(a)
    if not a._t.is_complex():
        return a
    if tol > 1:
        tol = np.finfo(a.dtype).eps * tol
    if bool((a._t.imag.abs() < tol).all()):
        return wrap(a._t.real.clone())
    return a


def correlate(a, v, mode="valid"):
    """Cross-correlation of two 1-d sequences, c[k] = sum_n a[n+k] * conj(v[n]) (matches
    numpy.correlate; modes 'valid' (default), 'same', 'full')."""
    v = asarray(v)
    if v.ndim != 1 or asarray(a).ndim != 1:
        raise ValueError("object too deep for desired array" if v.ndim > 1 or asarray(a).ndim > 1
                         else "correlate needs 1-d inputs")
    a = asarray(a)
    rev = conjugate(v)[::-1] if v._t.is_complex() else v[::-1]
    if mode != "same" or v.shape[0] <= a.shape[0] or a.shape[0] == 0:
        return convolve(a, rev, mode)
    # NumPy correlates the longer sequence with the shorter and reverses: for 'same' that centres
    # the window of the full result differently when v is the longer one
    full = convolve(a, rev, "full")
    k = a.shape[0] // 2
    return full[k:k + v.shape[0]]


def trim_zeros(filt, trim="fb", axis=None):
    """filt without its leading ('f') and/or trailing ('b') zeros along the given axes (all axes
    by default; matches numpy.trim_zeros). Returns a view."""
    a = asarray(filt)
    t = a._t
    trim = trim.lower() if isinstance(trim, str) else trim
    if not isinstance(trim, str) or not set(trim) <= {"f", "b"} or not trim:
        raise ValueError(f"unexpected character(s) in `trim`: {trim!r}")
    if t.ndim == 0:
        return a                                   # NumPy 2.2+: a 0-d array has nothing to trim
    axes = normalize_axes(axis, t.ndim)
    nz = t != 0
    key = [slice(None)] * t.ndim
    for ax in axes:
        other = tuple(i for i in range(t.ndim) if i != ax)
        has = nz.any(dim=other) if other else nz
        idx = torch.nonzero(has).reshape(-1)
        if idx.numel() == 0:
            start = stop = 0
        else:
            start = int(idx[0]) if "f" in trim else 0
            stop = int(idx[-1]) + 1 if "b" in trim else t.shape[ax]
        key[ax] = slice(start, stop)
    return a[tuple(key)]
