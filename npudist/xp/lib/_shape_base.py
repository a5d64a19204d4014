"""Applying functions along and over axes (matches numpy.apply_along_axis and
numpy.apply_over_axes; CuPy's cupy/lib/_shape_base.py). NumPy's algorithms with xp arrays: the
function is called from Python once per 1-D slice (apply_along_axis) or once per axis
(apply_over_axes), on npu views of the array."""
import numpy as np
from numpy.lib.array_utils import normalize_axis_index

from .._creation import asanyarray, asarray, zeros
from .._manipulation import expand_dims, transpose

__all__ = ["apply_along_axis", "apply_over_axes"]


def apply_along_axis(func1d, axis, arr, *args, **kwargs):
    """``func1d(a_1d, *args, **kwargs)`` applied to every 1-D slice of ``arr`` along ``axis``
    (matches numpy.apply_along_axis). The results (scalars, arrays of any shape, tuples of scalars)
    are stacked where the axis was: the output shape is ``arr.shape[:axis] + res.shape +
    arr.shape[axis+1:]`` in the first result's dtype (later results are cast to it). Raises NumPy's
    AxisError for a bad axis and ValueError when an iteration axis is empty (the function is never
    called)."""
    arr = asanyarray(arr)
    nd = arr.ndim
    axis = normalize_axis_index(axis, nd)
    dims = list(range(nd))
    view = transpose(arr, dims[:axis] + dims[axis + 1:] + [axis])
    inds = (ind + (Ellipsis,) for ind in np.ndindex(view.shape[:-1]))
    try:
        ind0 = next(inds)
    except StopIteration:
        raise ValueError("Cannot apply_along_axis when any iteration dimensions are 0") from None
    res = asanyarray(func1d(view[ind0], *args, **kwargs))
    buff = zeros(view.shape[:-1] + res.shape, res.dtype)
    bd = list(range(buff.ndim))
    permute = bd[:axis] + bd[buff.ndim - res.ndim:] + bd[axis:buff.ndim - res.ndim]
    buff[ind0] = res
    for ind in inds:
        buff[ind] = asanyarray(func1d(view[ind], *args, **kwargs))
    return transpose(buff, permute)


def apply_over_axes(func, a, axes):
    """``func(a, axis)`` applied repeatedly over each of ``axes`` (matches numpy.apply_over_axes):
    a result with one dimension fewer gets it back as a length-1 axis, so the output has ``a``'s
    number of dimensions. Raises ValueError ("function is not returning an array of the correct
    shape") otherwise; bad axes raise what ``func`` raises (AxisError for xp's reductions)."""
    val = asarray(a)
    n = val.ndim
    if np.ndim(axes) == 0:
        axes = (axes,)
    for axis in axes:
        if axis < 0:
            axis = n + axis
        res = func(val, axis)
        if res.ndim == val.ndim:
            val = res
        else:
            res = expand_dims(res, axis)
            if res.ndim != val.ndim:
                raise ValueError("function is not returning an array of the correct shape")
            val = res
    return val
