"""Adding and removing elements: delete, insert, append, resize (matches NumPy's)."""
import numpy as np
import torch

from .._core import ndarray, normalize_axis, normalize_index_array, tensor_of, wrap
from .join import concatenate
from .shape import ravel

_t = tensor_of  # the package's one unwrapping helper


def delete(arr, obj, axis=None):
    """Array without the given sub-arrays (matches numpy.delete)."""
    t = _t(arr)
    if axis is None:
        t, axis = t.reshape(-1), 0
    axis = normalize_axis(axis, t.ndim)
    n = t.shape[axis]
    keep = torch.ones(n, dtype=torch.bool, device=t.device)
    if isinstance(obj, slice):
        keep[torch.arange(n, device=t.device)[_slice_idx(obj, n)]] = False
    else:
        idx = _t(obj)
        if idx.numel() == 0 and not isinstance(obj, (ndarray, torch.Tensor)):
            idx = idx.long()                      # NumPy: an empty list/tuple is an empty index
        if idx.dtype == torch.bool:
            if idx.ndim != 1 or idx.shape[0] != n:
                raise ValueError(f"boolean array argument obj to delete must be one dimensional and match the "
                                 f"axis length of {n}")
            keep = ~idx
        elif idx.is_floating_point() or idx.is_complex():
            raise IndexError("arrays used as indices must be of integer (or boolean) type")
        else:
            keep[normalize_index_array(idx.reshape(-1), n)] = False
    return wrap(t.index_select(axis, torch.nonzero(keep).reshape(-1)))


def _slice_idx(s, n):
    return torch.arange(*s.indices(n))


def insert(arr, obj, values, axis=None):
    """Inserts values before the given indices (matches numpy.insert)."""
    t = _t(arr)
    if axis is None:
        t, axis = t.reshape(-1), 0
    axis = normalize_axis(axis, t.ndim)
    n = t.shape[axis]
    idx = _slice_idx(obj, n).to(t.device) if isinstance(obj, slice) else _t(obj).long()
    scalar = idx.ndim == 0
    idx = idx.reshape(-1)
    if idx.numel() and (bool((idx < -n).any()) or bool((idx > n).any())):
        raise IndexError(f"index out of bounds for axis {axis} with size {n}")
    idx = torch.where(idx < 0, idx + n, idx)
    v = _t(values).to(t.dtype)
    if v.ndim < t.ndim:
        v = v.reshape((1,) * (t.ndim - v.ndim) + tuple(v.shape))
    if scalar:
        v = torch.movedim(v, 0, axis)
        k = v.shape[axis]
        idx = idx.expand(k)
    else:
        k = idx.numel()
    shape = list(t.shape)
    shape[axis] = k
    vals = v.broadcast_to(shape)
    order = torch.argsort(idx, stable=True)
    new_pos = idx[order] + torch.arange(k, device=t.device)
    is_new = torch.zeros(n + k, dtype=torch.bool, device=t.device)
    is_new[new_pos] = True
    out_shape = list(t.shape)
    out_shape[axis] = n + k
    out = torch.empty(out_shape, dtype=t.dtype, device=t.device)
    out.index_copy_(axis, new_pos, vals.index_select(axis, order) if not scalar else vals.contiguous())
    out.index_copy_(axis, torch.nonzero(~is_new).reshape(-1), t.contiguous())
    return wrap(out)


def append(arr, values, axis=None):
    if axis is None:
        return concatenate([ravel(arr), ravel(values)], 0)
    return concatenate([arr, values], axis)


def resize(a, new_shape):
    """Array of new_shape filled cyclically with a's elements (matches numpy.resize)."""
    t = _t(a).reshape(-1)
    shape = (new_shape,) if isinstance(new_shape, int) else tuple(new_shape)
    n = int(np.prod(shape))
    if t.numel() == 0:
        return wrap(torch.zeros(shape, dtype=t.dtype, device=t.device))
    return wrap(t.repeat(-(-n // t.numel()))[:n].reshape(shape))
