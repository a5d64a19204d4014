"""Shapes: reshape, ravel, shape, ndim, size (matches NumPy's)."""
import operator

import numpy as np

from .._core import is_f_contiguous, ndarray, tensor_of, wrap


_t = tensor_of  # the package's one unwrapping helper


def reshape(a, shape=None, order="C", *, newshape=None, copy=None):
    """Array with the same data and a new shape (matches numpy.reshape; a view when possible)."""
    t = _t(a)
    shape = newshape if shape is None else shape
    if isinstance(shape, (int, np.integer)) or hasattr(shape, "__index__") and not isinstance(shape, (tuple, list)):
        shape = (operator.index(shape),)
    shape = tuple(operator.index(s) for s in shape)
    order = order.upper() if isinstance(order, str) else order
    if order not in ("C", "F", "A"):
        raise ValueError("order must be 'C', 'F' or 'A'")
    if order == "A":   # F when the array is Fortran- and not C-contiguous (NumPy's rule)
        order = "F" if is_f_contiguous(t) and not t.is_contiguous() else "C"
    try:
        if order == "F":
            r = t.permute(*range(t.ndim - 1, -1, -1)).reshape(shape[::-1])
            r = r.permute(*range(r.ndim - 1, -1, -1))
        elif copy is False:
            r = t.view(shape)
        else:
            r = t.reshape(shape)
    except RuntimeError as e:
        if copy is False:
            raise ValueError(f"reshape(copy=False): this reshape needs a copy ({e})") from None
        raise ValueError(f"cannot reshape array of size {t.numel()} into shape {shape}") from None
    if copy and r.data_ptr() == t.data_ptr() and r.numel():
        r = r.clone()
    return wrap(r)


def ravel(a, order="C"):
    """Flattened array (matches numpy.ravel; a view when possible)."""
    return reshape(a, (-1,), order="F" if order == "F" else "C")


def shape(a):
    return tuple(_t(a).shape) if not isinstance(a, ndarray) else a.shape


def ndim(a):
    return a.ndim if isinstance(a, ndarray) else np.ndim(a)


def size(a, axis=None):
    t = _t(a)
    return t.numel() if axis is None else t.shape[axis]
