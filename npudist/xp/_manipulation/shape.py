"""Shapes: reshape, ravel (the core's, npudist.xp._core._manipulation), shape, ndim, size (matches NumPy's)."""
import numpy as np

from .._core import ndarray, tensor_of
from .._core._manipulation import ravel, reshape  # noqa: F401  (re-exported: the core's own, behind ndarray's methods)

_t = tensor_of  # the package's one unwrapping helper


def shape(a):
    return tuple(_t(a).shape) if not isinstance(a, ndarray) else a.shape


def ndim(a):
    return a.ndim if isinstance(a, ndarray) else np.ndim(a)


def size(a, axis=None):
    t = _t(a)
    return t.numel() if axis is None else t.shape[axis]
