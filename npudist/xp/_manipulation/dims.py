"""Dimensions: expand_dims, squeeze, atleast_1d/2d/3d, broadcast_to/shapes/arrays (matches NumPy's)."""
import numpy as np
import torch

from .._core import normalize_axes, tensor_of, wrap
from .._core._manipulation import squeeze  # noqa: F401  (re-exported: the core's own, behind ndarray.squeeze)

_t = tensor_of  # the package's one unwrapping helper


def expand_dims(a, axis):
    """Inserts length-1 axes (matches numpy.expand_dims)."""
    t = _t(a)
    axes = axis if isinstance(axis, (tuple, list)) else (axis,)
    nd = t.ndim + len(axes)
    axes = sorted(normalize_axes(tuple(axes), nd))
    shape = list(t.shape)
    for ax in axes:
        shape.insert(ax, 1)
    return wrap(t.reshape(shape))


def atleast_1d(*arys):
    res = [wrap(_t(a).reshape(1)) if _t(a).ndim == 0 else wrap(_t(a)) for a in arys]
    return res[0] if len(res) == 1 else tuple(res)


def atleast_2d(*arys):
    res = []
    for a in arys:
        t = _t(a)
        res.append(wrap(t.reshape(1, -1) if t.ndim < 2 and t.numel() else t.reshape((1,) * (2 - t.ndim) + tuple(t.shape))
                        if t.ndim < 2 else t))
    return res[0] if len(res) == 1 else tuple(res)


def atleast_3d(*arys):
    res = []
    for a in arys:
        t = _t(a)
        if t.ndim == 0:
            t = t.reshape(1, 1, 1)
        elif t.ndim == 1:
            t = t.reshape(1, -1, 1)
        elif t.ndim == 2:
            t = t.unsqueeze(-1)
        res.append(wrap(t))
    return res[0] if len(res) == 1 else tuple(res)


def broadcast_to(array, shape, subok=False):
    """Read-only view broadcast to shape (matches numpy.broadcast_to)."""
    t = _t(array)
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    try:
        return wrap(t.broadcast_to(shape))
    except RuntimeError:
        raise ValueError(f"operands could not be broadcast together with remapped shapes "
                         f"[original->remapped]: {tuple(t.shape)} and requested shape {shape}") from None


def broadcast_shapes(*shapes):
    try:
        return tuple(torch.broadcast_shapes(*[(s,) if isinstance(s, int) else tuple(s) for s in shapes]))
    except RuntimeError:
        raise ValueError(f"shape mismatch: objects cannot be broadcast to a single shape: {shapes}") from None


def broadcast_arrays(*args, subok=False):
    ts = [_t(a) for a in args]
    shape = broadcast_shapes(*[t.shape for t in ts])
    return tuple(wrap(t.broadcast_to(shape)) for t in ts)
