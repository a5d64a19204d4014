"""Rearranging: flip, fliplr, flipud, roll, rot90 (matches NumPy's)."""
import torch

from .._core import normalize_axes, normalize_axis, tensor_of, wrap


_t = tensor_of  # the package's one unwrapping helper


def flip(m, axis=None):
    """Reverses element order (matches numpy.flip's values; returns a copy, not a view)."""
    t = _t(m)
    return wrap(t.flip(normalize_axes(axis, t.ndim)))


def fliplr(m):
    return flip(m, 1)


def flipud(m):
    return flip(m, 0)


def roll(a, shift, axis=None):
    """Rolls elements along axes (matches numpy.roll)."""
    t = _t(a)
    if axis is None:
        return wrap(torch.roll(t.reshape(-1), int(shift) if not isinstance(shift, (tuple, list)) else sum(shift)
                               ).reshape(t.shape))
    shift = tuple(shift) if isinstance(shift, (tuple, list)) else (shift,)
    axes = tuple(axis) if isinstance(axis, (tuple, list)) else (axis,)
    if len(shift) == 1 and len(axes) > 1:
        shift = shift * len(axes)
    if len(axes) == 1 and len(shift) > 1:
        axes = axes * len(shift)
    return wrap(torch.roll(t, tuple(int(s) for s in shift), tuple(normalize_axis(x, t.ndim) for x in axes)))


def rot90(m, k=1, axes=(0, 1)):
    t = _t(m)
    return wrap(torch.rot90(t, k, [normalize_axis(x, t.ndim) for x in axes]))
