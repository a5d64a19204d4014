"""Rearranging: flip, fliplr, flipud, roll, rot90 (matches NumPy's)."""
import operator

import numpy as np
import torch

from .._core import ndarray, normalize_axes, normalize_axis, tensor_of, wrap

_t = tensor_of  # the package's one unwrapping helper


def flip(m, axis=None):
    """Reverses element order along ``axis`` (all axes by default): a view with negative strides
    of m's memory, as numpy.flip's (npudist.xp._negview); a copy when m is not an xp array."""
    if not isinstance(m, ndarray):
        m = wrap(_t(m))
    axes = set(normalize_axes(axis, m.ndim))
    return m[tuple(slice(None, None, -1) if d in axes else slice(None) for d in range(m.ndim))]


def fliplr(m):
    return flip(m, 1)


def flipud(m):
    return flip(m, 0)


def roll(a, shift, axis=None):
    """Rolls elements along axes (matches numpy.roll: ``shift`` and ``axis`` broadcast together,
    shifts of a repeated axis add up; ``shift`` may be an xp array (its values are read to the
    host); NumPy's ValueError/AxisError/TypeError for bad arguments)."""
    t = _t(a)
    if axis is None:
        return wrap(roll(wrap(t.reshape(-1)), shift, 0)._t.reshape(t.shape))
    axes = [normalize_axis(operator.index(x), t.ndim) for x in (axis if isinstance(axis, (tuple, list)) else (axis,))]
    if isinstance(shift, ndarray):
        shift = shift.tolist()
    b = np.broadcast(np.array(shift, dtype=object), np.array(axes if isinstance(axis, (tuple, list)) else axes[0]))
    if b.ndim > 1:
        raise ValueError("'shift' and 'axis' should be scalars or 1D sequences")
    shifts = dict.fromkeys(range(t.ndim), 0)
    for sh, ax in b:
        shifts[int(ax)] += int(sh)
    dims = [ax for ax, sh in shifts.items() if sh]
    if not dims:
        return wrap(t.clone())
    return wrap(torch.roll(t, tuple(shifts[d] for d in dims), tuple(dims)))


def rot90(m, k=1, axes=(0, 1)):
    """Rotates by 90 degrees k times in the plane of ``axes`` (matches numpy.rot90, its ValueErrors)."""
    t = _t(m)
    axes = tuple(axes)
    if len(axes) != 2:
        raise ValueError("len(axes) must be 2.")
    if axes[0] == axes[1] or abs(axes[0] - axes[1]) == t.ndim:
        raise ValueError("Axes must be different.")
    if not (-t.ndim <= axes[0] < t.ndim and -t.ndim <= axes[1] < t.ndim):
        raise ValueError(f"Axes={axes} out of range for array of ndim={t.ndim}.")
    return wrap(torch.rot90(t, k, [normalize_axis(x, t.ndim) for x in axes]))
