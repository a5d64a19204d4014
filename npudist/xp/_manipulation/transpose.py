"""Axis permutations: transpose, permute_dims, matrix_transpose, swapaxes, moveaxis, rollaxis (matches NumPy's)."""
import torch

from .._core import normalize_axes, normalize_axis, tensor_of, wrap
from .._core._manipulation import swapaxes, transpose  # noqa: F401  (re-exported: the core's own, behind ndarray's methods)

_t = tensor_of  # the package's one unwrapping helper


def permute_dims(a, axes):
    """Array API permute_dims (matches numpy.permute_dims)."""
    return transpose(a, axes)


def matrix_transpose(x):
    t = _t(x)
    if t.ndim < 2:
        raise ValueError("matrix_transpose needs at least 2 dimensions")
    return wrap(t.transpose(-1, -2))


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
