"""Shapes: reshape, ravel, shape, ndim, size (matches NumPy's)."""
import math
import operator

import numpy as np

from .._core import is_f_contiguous, ndarray, tensor_of, wrap
from .._negview import strides_of

_t = tensor_of  # the package's one unwrapping helper


_MAXDIMS = 64       # NumPy 2's NPY_MAXDIMS


def _as_view_of(r, t, a):
    """Wraps r; when r is a view of a's memory its ``base`` is a (NumPy's)."""
    res = wrap(r)
    if isinstance(a, ndarray) and r.numel() and r.data_ptr() == t.data_ptr() or isinstance(a, ndarray) and not r.numel():
        res._b = a
    return res


def _canonical_strides(shape, fortran):
    """NumPy's strides (in elements) of a new array of ``shape`` (zero-length axes count as 1)."""
    strides, s = [0] * len(shape), 1
    for i in (range(len(shape)) if fortran else range(len(shape) - 1, -1, -1)):
        strides[i] = s
        s *= max(shape[i], 1)
    return tuple(strides)


def reshape(a, shape=None, order="C", *, newshape=None, copy=None):
    """Array with the same data and a new shape (matches numpy.reshape: a view when the strides
    allow one, else a copy; ``copy=False`` raises ValueError when a copy is needed, ``copy=True``
    always copies; one unknown dimension (any negative value); NumPy's ValueErrors)."""
    t = _t(a)
    shape = newshape if shape is None else shape
    if isinstance(shape, (int, np.integer)) or hasattr(shape, "__index__") and not isinstance(shape, (tuple, list)):
        shape = (operator.index(shape),)
    shape = tuple(operator.index(s) for s in shape)
    if isinstance(copy, str):
        raise ValueError("strings are not allowed for 'copy' keyword. Use True/False/None instead.")
    order = order.upper() if isinstance(order, str) and len(order) == 1 else order
    if order not in ("C", "F", "A"):
        raise ValueError(f"order {order!r} is not permitted for reshaping")
    if len(shape) > _MAXDIMS:
        raise ValueError(f"maximum supported dimension for an ndarray is currently {_MAXDIMS}, found {len(shape)}")
    unknown = [i for i, s in enumerate(shape) if s < 0]
    if len(unknown) > 1:
        raise ValueError("can only specify one unknown dimension")
    n = t.numel()
    known = math.prod(s for s in shape if s >= 0)
    if unknown:
        if known == 0 or n % known:
            raise ValueError(f"cannot reshape array of size {n} into shape {shape}")
        shape = tuple(n // known if s < 0 else s for s in shape)
    elif known != n:
        raise ValueError(f"cannot reshape array of size {n} into shape {shape}")
    if order == "A":   # F when the array is Fortran- and not C-contiguous (NumPy's rule)
        order = "F" if is_f_contiguous(t) and not t.is_contiguous() else "C"
    if n == 0:
        st = t.stride() if shape == tuple(t.shape) else _canonical_strides(shape, order == "F")
        r = t.as_strided(shape, st)
    else:
        rev = tuple(range(t.ndim - 1, -1, -1))
        src = t.permute(rev) if order == "F" else t
        tgt = shape[::-1] if order == "F" else shape
        try:
            r = src.view(tgt)
        except RuntimeError:
            if copy is False:
                raise ValueError("Unable to avoid creating a copy while reshaping.") from None
            r = src.reshape(tgt)
        if order == "F":
            r = r.permute(tuple(range(len(shape) - 1, -1, -1)))
    if copy and (not n or r.data_ptr() == t.data_ptr()):
        return wrap(r.clone())
    return _as_view_of(r, t, a)


def _memory_order(t):
    """Axes outermost first in memory order, as NumPy's iterator orders them for order='K': an
    insertion sort by absolute stride in which a zero (broadcast) stride decides nothing."""
    st = [abs(x) for x in strides_of(t)]              # (a negative-stride view's own strides)
    axes = list(range(t.ndim - 1, -1, -1))            # innermost first
    for i0 in range(1, len(axes)):
        a0, pos = axes[i0], i0
        for i1 in range(i0 - 1, -1, -1):
            a1 = axes[i1]
            if st[a0] and st[a1]:
                if st[a1] <= st[a0]:
                    break
                pos = i1
        if pos != i0:
            axes.insert(pos, axes.pop(i0))
    return axes[::-1]


def ravel(a, order="C"):
    """Flattened array (matches numpy.ravel: a view when the elements are contiguous in the asked
    order, else a contiguous copy; 'A' and 'K' (memory order, axes by descending stride) too)."""
    t = _t(a)
    o = order.upper() if isinstance(order, str) and len(order) == 1 else order
    if o not in ("C", "F", "A", "K"):
        raise ValueError(f"order must be one of 'C', 'F', 'A', 'K', got {order!r}")
    if o == "A":
        o = "F" if is_f_contiguous(t) and not t.is_contiguous() else "C"
    if o == "K":
        o = "C" if t.is_contiguous() else "F" if is_f_contiguous(t) else "K"
    if o == "C":
        src = t
    elif o == "F":
        src = t.permute(tuple(range(t.ndim - 1, -1, -1)))
    else:
        src = t.permute(_memory_order(t))
    if not src.is_contiguous():
        src = src.contiguous()
    return _as_view_of(src.reshape(-1), t, a)


def shape(a):
    return tuple(_t(a).shape) if not isinstance(a, ndarray) else a.shape


def ndim(a):
    return a.ndim if isinstance(a, ndarray) else np.ndim(a)


def size(a, axis=None):
    t = _t(a)
    return t.numel() if axis is None else t.shape[axis]
