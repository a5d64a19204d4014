"""The indexing routines ndarray's methods are made of (take, put, nonzero, compress, choose;
matches NumPy's), in the core as CuPy keeps them in cupy._core: ``a.take(i)`` and
``xp.take(a, i)`` run the same function. npudist.xp._indexing_routines re-exports them beside the
routines no method needs."""
import numpy as np
import torch

from .. import _host  # NumPy's functions on npu memory first (where measured faster)
from .._convert import normalize_axis, result_dtype, tensor_of
from .._dtypes import NP_TO_TORCH
from .._indexing import normalize_index_array
from . import _array
from ._array import result, wrap

_t = tensor_of  # the package's one unwrapping helper


def _broadcast(*ts):
    """Tensors broadcast to one shape, wrapped (numpy.broadcast_arrays; ValueError on a mismatch)."""
    try:
        shape = torch.broadcast_shapes(*[t.shape for t in ts])
    except RuntimeError:
        raise ValueError(f"shape mismatch: objects cannot be broadcast to a single shape: "
                         f"{tuple(tuple(t.shape) for t in ts)}") from None
    return tuple(wrap(t.broadcast_to(shape)) for t in ts)


@_host.numpy_first(np.take, _array.array_type, big=True, fp=_host.FP_NEVER)   # (indexing: no FP state to set)
def take(a, indices, axis=None, out=None, mode="raise"):
    """Elements at indices along axis (matches numpy.take, modes raise/wrap/clip)."""
    t = _t(a)
    idx = _t(indices)
    if axis is None:
        t, axis = t.reshape(-1), 0
    axis = normalize_axis(axis, t.ndim)
    n = t.shape[axis]
    if mode == "wrap":
        idx = idx.long().remainder(n)
    elif mode == "clip":
        idx = idx.long().clamp(0, n - 1)
    else:
        idx = normalize_index_array(idx, n)
    res = t.index_select(axis, idx.reshape(-1))
    res = res.reshape(tuple(t.shape[:axis]) + tuple(idx.shape) + tuple(t.shape[axis + 1:]))
    return result(res, out)


def put(a, ind, v, mode="raise"):
    """In place a.flat[ind] = v (matches numpy.put)."""
    if mode not in ("raise", "wrap", "clip"):
        raise ValueError(f"clipmode must be one of 'clip', 'raise', or 'wrap' (got {mode!r})")
    t = a._t
    flat = t.view(-1)
    idx = _t(ind).reshape(-1)
    n = flat.numel()
    idx = idx.long().remainder(n) if mode == "wrap" else idx.long().clamp(0, n - 1) if mode == "clip" else normalize_index_array(idx, n)
    vals = _t(v).to(t.dtype).reshape(-1)
    if vals.numel() == 0:       # NumPy: nothing to put
        return
    if vals.numel() != idx.numel():
        vals = vals.repeat(-(-idx.numel() // max(vals.numel(), 1)))[:idx.numel()]
    flat[idx] = vals


def nonzero(a):
    """Indices of non-zero elements, one int64 array per axis (matches numpy.nonzero)."""
    t = _t(a)
    if t.ndim == 0:
        raise ValueError("Calling nonzero on 0d arrays is not allowed. Use np.atleast_1d(scalar).nonzero() instead.")
    return tuple(wrap(i) for i in torch.nonzero(t, as_tuple=True))


def compress(condition, a, axis=None, out=None):
    """Slices of a along axis where condition is true (matches numpy.compress: condition is
    flattened; IndexError when it has a true entry past the axis' length; ``out`` as NumPy's)."""
    t = _t(a)
    c = _t(condition).reshape(-1).bool()
    if axis is None:
        t, axis = t.reshape(-1), 0
    axis = normalize_axis(axis, t.ndim)
    idx = torch.nonzero(c).reshape(-1)
    if idx.numel() and int(idx.max()) >= t.shape[axis]:
        raise IndexError("condition longer than the axis")
    return result(t.index_select(axis, idx), out)


def choose(a, choices, out=None, mode="raise"):
    """Elements picked from ``choices`` by the index array a, all broadcast together (matches
    numpy.choose; modes raise/wrap/clip, ValueError for an index out of range in 'raise')."""
    idx = _t(a).long()
    cs = _broadcast(idx, *[_t(c) for c in choices])
    dt = NP_TO_TORCH[result_dtype(*[c._t for c in cs[1:]])]
    stacked = torch.stack([c._t.to(dt) for c in cs[1:]])
    n = stacked.shape[0]
    i = cs[0]._t
    if mode == "wrap":
        i = i.remainder(n)
    elif mode == "clip":
        i = i.clamp(0, n - 1)
    elif i.numel() and (bool((i < 0).any()) or bool((i >= n).any())):
        raise ValueError("invalid entry in choice array")
    return result(torch.gather(stacked, 0, i.unsqueeze(0)).squeeze(0), out)
