"""Axis permutations: transpose, permute_dims, matrix_transpose, swapaxes, moveaxis, rollaxis (matches NumPy's)."""
import torch

from .._core import normalize_axes, normalize_axis, tensor_of, wrap

_t = tensor_of  # the package's one unwrapping helper


def transpose(a, axes=None):
    """Permuted axes (matches numpy.transpose; a view)."""
    t = _t(a)
    if axes is None:
        return wrap(t.permute(*range(t.ndim - 1, -1, -1)))
    axes = tuple(normalize_axis(x, t.ndim) for x in axes)
    if len(axes) != t.ndim or len(set(axes)) != t.ndim:
        raise ValueError("axes don't match array")
    return wrap(t.permute(*axes))


def permute_dims(a, axes):
    """Array API permute_dims (matches numpy.permute_dims)."""
    return transpose(a, axes)


def matrix_transpose(x):
    t = _t(x)
    if t.ndim < 2:
        raise ValueError("matrix_transpose needs at least 2 dimensions")
    return wrap(t.transpose(-1, -2))


def swapaxes(a, axis1, axis2):
    t = _t(a)
    return wrap(t.transpose(normalize_axis(axis1, t.ndim), normalize_axis(axis2, t.ndim)))


def moveaxis(a, source, destination):
    """Moves axes to new positions (matches numpy.moveaxis)."""
    t = _t(a)
    src = normalize_axes(source if isinstance(source, (tuple, list)) else (source,), t.ndim)
    dst = normalize_axes(destination if isinstance(destination, (tuple, list)) else (destination,), t.ndim)
    if len(src) != len(dst):
        raise ValueError("`source` and `destination` arguments must have the same number of elements")
    return wrap(torch.movedim(t, src, dst))


def rollaxis(a, axis, start=0):
    t = _t(a)
    axis = normalize_axis(axis, t.ndim)
    start = start + t.ndim if start < 0 else start
    if axis < start:
        start -= 1
    return moveaxis(a, axis, start)
