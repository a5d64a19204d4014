"""Joining: concatenate, concat, stack, vstack/row_stack, hstack, dstack, column_stack (matches NumPy's)."""
import warnings

import numpy as np
import torch

from .._core import ndarray, normalize_axis, result, tensor_of, wrap
from .._dtypes import NP_TO_TORCH, TORCH_TO_NP, to_dtype
from .dims import atleast_1d, atleast_2d, atleast_3d

_t = tensor_of  # the package's one unwrapping helper


def _joined(arrays, dtype, casting="same_kind", out=None, name="concatenate"):
    ts = [_t(a) for a in arrays]
    if not ts:
        raise ValueError("need at least one array to concatenate")
    if out is not None and dtype is not None:
        raise TypeError(f"{name}() only takes `out` or `dtype` as an argument, but both were provided.")
    if out is not None:
        dtype = out.dtype                 # NumPy casts the inputs straight into out's dtype
    dt = to_dtype(np.result_type(*[TORCH_TO_NP[t.dtype] for t in ts])) if dtype is None else to_dtype(dtype)
    if dtype is not None and casting != "unsafe":
        for t in ts:
            if not np.can_cast(TORCH_TO_NP[t.dtype], dt, casting):
                raise TypeError(f"Cannot cast array data from {TORCH_TO_NP[t.dtype]!r} to {dt!r} according to the "
                                f"rule {casting!r}")
    tdt = NP_TO_TORCH[dt]
    return [t if t.dtype == tdt else t.to(tdt) for t in ts]


def concatenate(arrays, axis=0, out=None, dtype=None, casting="same_kind"):
    """Joins arrays along an existing axis (matches numpy.concatenate; axis=None flattens; ``out``
    takes the inputs cast with ``casting`` into its dtype, TypeError as NumPy otherwise)."""
    ts = _joined(arrays, dtype, casting, out)
    if axis is None:
        ts = [t.reshape(-1) for t in ts]
        axis = 0
    nd = ts[0].ndim
    if nd == 0:
        raise ValueError("zero-dimensional arrays cannot be concatenated")
    for t in ts:
        if t.ndim != nd:
            raise ValueError(f"all the input array dimensions must match: an array has {nd} dimension(s) and "
                             f"another {t.ndim}")
    ax = normalize_axis(axis, nd)
    for i, t in enumerate(ts[1:], 1):
        for d in range(nd):
            if d != ax and t.shape[d] != ts[0].shape[d]:
                raise ValueError(f"all the input array dimensions except for the concatenation axis must match "
                                 f"exactly, but along dimension {d}, the array at index 0 has size {ts[0].shape[d]} "
                                 f"and the array at index {i} has size {t.shape[d]}")
    res = torch.cat(ts, dim=ax)
    return result(res, out)


def concat(arrays, /, *, axis=0):
    """Array API concat (matches numpy.concat)."""
    return concatenate(arrays, axis=axis)


def stack(arrays, axis=0, out=None, *, dtype=None, casting="same_kind"):
    """Joins arrays along a new axis (matches numpy.stack)."""
    ts = _joined(arrays, dtype, casting, out, "stack")
    shape = ts[0].shape
    for t in ts:
        if t.shape != shape:
            raise ValueError("all input arrays must have the same shape")
    res = torch.stack(ts, dim=normalize_axis(axis, ts[0].ndim + 1))
    return result(res, out)


def _seq(tup, name):
    if isinstance(tup, ndarray):
        raise TypeError(f"{name} takes a sequence of arrays")
    return list(tup)


def vstack(tup, *, dtype=None, casting="same_kind"):
    return concatenate([atleast_2d(a) for a in _seq(tup, "vstack")], 0, dtype=dtype, casting=casting)


def row_stack(tup, *, dtype=None, casting="same_kind"):
    """Deprecated alias of vstack (as in NumPy 2: DeprecationWarning, then vstack)."""
    warnings.warn("`row_stack` alias is deprecated. Use `xp.vstack` directly.", DeprecationWarning, stacklevel=2)
    return vstack(tup, dtype=dtype, casting=casting)


def hstack(tup, *, dtype=None, casting="same_kind"):
    arrs = [atleast_1d(a) for a in _seq(tup, "hstack")]
    return concatenate(arrs, 0 if arrs and arrs[0].ndim == 1 else 1, dtype=dtype, casting=casting)


def dstack(tup):
    return concatenate([atleast_3d(a) for a in _seq(tup, "dstack")], 2)


def column_stack(tup):
    arrs = []
    for a in _seq(tup, "column_stack"):
        t = _t(a)
        arrs.append(wrap(t.reshape(-1, 1)) if t.ndim < 2 else wrap(t))
    return concatenate(arrs, 1)
