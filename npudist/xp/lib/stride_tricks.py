"""Views with chosen shapes and strides over an array's npu memory (matches
numpy.lib.stride_tricks and cupy.lib.stride_tricks: as_strided, sliding_window_view; the
broadcasting helpers are xp's own).

Partial: arrays with negative strides (``a[::-1]``) raise NotImplementedError (copy them first
with ``xp.ascontiguousarray``), and ``writeable=False`` is not enforced: npu tensors have no
read-only flag, so a write through the view changes the array as it would with writeable=True."""
import operator

import numpy as np

from .._convert import normalize_axis
from .._core import ndarray, tensor_of, wrap
from .._manipulation import broadcast_arrays, broadcast_to
from .._negview import strides_of

__all__ = ["as_strided", "sliding_window_view", "broadcast_to", "broadcast_arrays", "broadcast_shapes"]

broadcast_shapes = np.broadcast_shapes


def _positive_strided(x, name):
    t = tensor_of(x) if isinstance(x, ndarray) else tensor_of(wrap(tensor_of(x)))
    if any(s < 0 for s in strides_of(t)):
        raise NotImplementedError(f"{name}: the array has negative strides; copy it first "
                                  f"(xp.ascontiguousarray(a))")
    return t


def as_strided(x, shape=None, strides=None, subok=False, writeable=True):
    """A view of x's memory with ``shape`` and ``strides`` in bytes (matches
    numpy.lib.stride_tricks.as_strided). As NumPy's, nothing checks that the view stays inside
    x's memory: reading past it returns whatever the allocator's block holds, writing past it
    corrupts other arrays. Strides must be multiples of the itemsize (ValueError otherwise)."""
    t = _positive_strided(x, "as_strided")
    shape = tuple(t.shape) if shape is None else tuple(operator.index(n) for n in shape)
    item = t.element_size()
    if strides is None:
        if shape != tuple(t.shape):
            raise ValueError("as_strided: pass strides= along with a new shape")
        elements = tuple(t.stride())
    else:
        strides = tuple(operator.index(s) for s in strides)
        if len(strides) != len(shape):
            raise ValueError(f"as_strided: shape {shape} and strides {strides} differ in length")
        if any(s % item for s in strides):
            raise ValueError(f"as_strided: strides {strides} must be multiples of the itemsize {item}")
        if any(s < 0 for s in strides):
            raise NotImplementedError("as_strided: negative strides are not supported on the npu")
        elements = tuple(s // item for s in strides)
    if any(n < 0 for n in shape):
        raise ValueError("negative dimensions are not allowed")
    return wrap(t.as_strided(shape, elements, t.storage_offset()))


def sliding_window_view(x, window_shape, axis=None, *, subok=False, writeable=False):
    """Every window of ``window_shape`` over ``axis`` (all axes when None) as one view: the
    windowed axes shrink by window - 1 and the window axes are appended, in ``axis`` order (an
    axis may repeat). Matches numpy.lib.stride_tricks.sliding_window_view; ValueError for a
    negative window, a window larger than its axis or mismatched lengths of window_shape/axis."""
    t = _positive_strided(x, "sliding_window_view")
    window = tuple(operator.index(w) for w in window_shape) if np.iterable(window_shape) \
        else (operator.index(window_shape),)
    if any(w < 0 for w in window):
        raise ValueError("`window_shape` cannot contain negative values")
    if axis is None:
        axes = tuple(range(t.ndim))
        if len(window) != len(axes):
            raise ValueError(f"Since axis is `None`, must provide window_shape for all dimensions of `x`; got "
                             f"{len(window)} window_shape elements and `x.ndim` is {t.ndim}.")
    else:
        axes = tuple(normalize_axis(a, t.ndim) for a in (axis if np.iterable(axis) else (axis,)))
        if len(window) != len(axes):
            raise ValueError(f"Must provide matching length window_shape and axis; got {len(window)} window_shape "
                             f"elements and {len(axes)} axes elements.")
    shape = list(t.shape)
    for ax, w in zip(axes, window):
        if shape[ax] < w:
            raise ValueError("window shape cannot be larger than input array shape")
        shape[ax] -= w - 1
    strides = tuple(t.stride()) + tuple(t.stride(ax) for ax in axes)
    return wrap(t.as_strided(tuple(shape) + window, strides, t.storage_offset()))
