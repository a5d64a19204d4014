"""Indexing routines (matches numpy's take, take_along_axis, put, where, nonzero, compress,
choose, select, unravel_index, ...)."""
import numpy as np
import torch

from . import _host  # NumPy's functions on npu memory first (where measured faster)
from ._config import device
from ._core import (
    ndarray,
    normalize_axes,
    normalize_axis,
    normalize_index_array,
    operand,
    result_dtype,
    tensor_of,
    wrap,
)
from ._core._indexing_routines import choose, compress, nonzero, put, take  # noqa: F401  (re-exported: the core's own, behind ndarray's methods)
from ._creation import ones
from ._dtypes import NP_TO_TORCH, TORCH_TO_NP
from ._unsigned import as_uint

_t = tensor_of  # the package's one unwrapping helper


def take_along_axis(arr, indices, axis=-1):
    """Picks values along axis with an index array of matching rank (matches numpy.take_along_axis)."""
    t = _t(arr)
    idx = _t(indices)
    if axis is None:
        t, axis = t.reshape(-1), 0
    axis = normalize_axis(axis, t.ndim)
    if idx.ndim != t.ndim:
        raise ValueError("`indices` and `arr` must have the same number of dimensions")
    idx = normalize_index_array(idx, t.shape[axis])
    shape = list(torch.broadcast_shapes(tuple(s if i != axis else 1 for i, s in enumerate(t.shape)),
                                        tuple(s if i != axis else 1 for i, s in enumerate(idx.shape))))
    ts = shape.copy()
    ts[axis] = t.shape[axis]
    ish = shape.copy()
    ish[axis] = idx.shape[axis]
    return wrap(torch.gather(t.expand(ts), axis, idx.expand(ish)))


def put_along_axis(arr, indices, values, axis):
    """In place: arr[..., indices, ...] = values along axis (matches numpy.put_along_axis)."""
    t = _t(arr)
    idx = _t(indices)
    if axis is None:
        if idx.ndim != 1:
            raise ValueError("when axis=None, `indices` must have a single dimension.")
        t, axis = t.reshape(-1), 0
    if idx.ndim != t.ndim:
        raise ValueError("`indices` and `arr` must have the same number of dimensions")
    axis = normalize_axis(axis, t.ndim)
    idx = normalize_index_array(idx, t.shape[axis])
    # NumPy's fancy index broadcasts the indices against arr's other axes
    idx = idx.expand(tuple(k if d == axis or k != 1 else n for d, (k, n) in enumerate(zip(idx.shape, t.shape))))
    v = _t(values).to(t.dtype).expand(idx.shape) if _t(values).ndim <= idx.ndim else _t(values)
    t.scatter_(axis, idx, v.contiguous())


@_host.numpy_first(np.where, ndarray, big=True)
def where(condition, x=None, y=None):
    """Elementwise choice (matches numpy.where; one argument: nonzero)."""
    if x is None and y is None:
        return nonzero(condition)
    if x is None or y is None:
        raise ValueError("either both or neither of x and y should be given")
    c = _t(condition)
    if c.dtype != torch.bool:
        c = c != 0
    ox, oy = operand(x), operand(y)
    dt = NP_TO_TORCH[result_dtype(ox, oy)]
    dev = c.device
    tx = ox.to(dt) if isinstance(ox, torch.Tensor) else torch.tensor(ox, dtype=dt, device=dev)
    ty = oy.to(dt) if isinstance(oy, torch.Tensor) else torch.tensor(oy, dtype=dt, device=dev)
    return wrap(torch.where(c, tx, ty))


def argwhere(a):
    t = _t(a)
    if t.ndim == 0:
        t = t.reshape(1)
        return wrap(torch.nonzero(t)[:, :0])
    return wrap(torch.nonzero(t))


def flatnonzero(a):
    return wrap(torch.nonzero(_t(a).reshape(-1)).reshape(-1))


def count_nonzero(a, axis=None, *, keepdims=False):
    """Number of non-zero values (matches numpy.count_nonzero; int64)."""
    t = _t(a)
    axes = normalize_axes(axis, t.ndim)
    nz = t != 0
    if not axes:
        return wrap(nz.long())
    r = nz.sum(dim=axes, keepdim=keepdims)
    return wrap(r)


def extract(condition, arr):
    """Elements of arr.ravel() at the true positions of condition.ravel() (matches numpy.extract:
    the sizes need not match; a true position past arr's size raises IndexError)."""
    a = _t(arr).reshape(-1)
    idx = torch.nonzero(_t(condition).reshape(-1)).reshape(-1)
    if idx.numel() and int(idx[-1]) >= a.numel():
        raise IndexError(f"index {int(idx[-1])} is out of bounds for axis 0 with size {a.numel()}")
    return wrap(a[idx])


def place(arr, mask, vals):
    t = arr._t
    m = _t(mask).bool()
    if m.numel() != t.numel():
        raise ValueError("place: mask and data must be the same size")
    m = m.reshape(t.shape)
    n = int(m.sum())
    v = _t(vals).reshape(-1).to(t.dtype)
    if n and v.numel() == 0:
        raise ValueError("Cannot insert from an empty array!")
    if n:
        t[m] = v.repeat(-(-n // v.numel()))[:n]


def select(condlist, choicelist, default=0):
    """Values from choicelist where condlist is true, first match wins (matches numpy.select)."""
    if len(condlist) != len(choicelist):
        raise ValueError("list of cases must be same length as list of conditions")
    if len(condlist) == 0:
        raise ValueError("select with an empty condition list is not possible")
    result = full_default = None
    ops = [operand(c) for c in choicelist] + [operand(default)]
    dt = NP_TO_TORCH[result_dtype(*ops)]
    conds = [_t(c) for c in condlist]
    shapes = [c.shape for c in conds] + [o.shape for o in ops if isinstance(o, torch.Tensor)]
    try:
        shape = torch.broadcast_shapes(*shapes)
    except RuntimeError:
        raise ValueError(f"shape mismatch: objects cannot be broadcast to a single shape: "
                         f"{', '.join(str(tuple(x)) for x in shapes)}") from None
    dev = conds[0].device if conds else None
    result = as_uint(torch.full(shape, 0, dtype=dt, device=dev)) + (ops[-1].to(dt) if isinstance(ops[-1], torch.Tensor) else ops[-1])
    for c, o in zip(reversed(conds), reversed(ops[:-1])):
        if c.dtype != torch.bool:
            raise TypeError("invalid entry in condlist: should be boolean ndarray")
        v = o.to(dt) if isinstance(o, torch.Tensor) else torch.tensor(o, dtype=dt, device=dev)
        result = torch.where(c, v, result)
    del full_default
    return wrap(result)


def _index_order(order):
    if order is None:
        return "C"
    if order not in ("C", "F"):
        raise ValueError("only 'C' or 'F' order is permitted")
    return order


def unravel_index(indices, shape, order="C"):
    """Flat indices -> tuple of coordinate arrays (matches numpy.unravel_index: integer indices
    only (TypeError), out-of-range indices raise ValueError, order 'C' or 'F')."""
    order = _index_order(order)
    idx = _t(indices)
    if idx.is_floating_point() or idx.is_complex() or idx.dtype == torch.bool:
        raise TypeError(f"only int indices permitted (got {TORCH_TO_NP[idx.dtype]})")
    idx = idx.long()
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    n = int(np.prod(shape))
    if idx.numel() and (bool((idx < 0).any()) or bool((idx >= n).any())):
        raise ValueError(f"index out of bounds for array of size {n}")
    if order == "F":
        return tuple(wrap(c) for c in reversed(torch.unravel_index(idx, shape[::-1])))
    return tuple(wrap(c) for c in torch.unravel_index(idx, shape))


def ravel_multi_index(multi_index, dims, mode="raise", order="C"):
    """Tuple of coordinate arrays -> flat indices (matches numpy.ravel_multi_index: coordinates
    broadcast together; ``mode`` 'raise', 'wrap', 'clip' or one per dimension; order 'C' or 'F';
    int64 result; NumPy's TypeError/ValueError for float dims or coordinates, a wrong count of
    coordinate arrays, an invalid mode or order, and dims whose size overflows int64)."""
    order = _index_order(order)
    dims = (dims,) if isinstance(dims, (int, np.integer)) else tuple(dims)
    for d in dims:
        if not isinstance(d, (int, np.integer)) or isinstance(d, bool):
            raise TypeError(f"'{type(d).__name__}' object cannot be interpreted as an integer")
    if isinstance(multi_index, ndarray):
        coords = [c for c in multi_index._t.unbind(0)] if multi_index.ndim else [multi_index._t]
    else:
        coords = [_t(c) for c in multi_index]
    for c in coords:
        if c.is_floating_point() or c.is_complex():
            raise TypeError(f"only int indices permitted (got {TORCH_TO_NP[c.dtype]})")
    if len(coords) != len(dims):
        raise ValueError(f"parameter multi_index must be a sequence of length {len(dims)}")
    modes = (mode,) * len(dims) if isinstance(mode, str) else tuple(mode)
    for m in modes:
        if m not in ("raise", "wrap", "clip"):
            raise ValueError(f"clipmode must be one of 'clip', 'raise', or 'wrap' (got {m!r})")
    if len(modes) != len(dims):
        raise ValueError("mode must be a string or a sequence with one mode per dimension")
    size = 1
    for d in dims:
        size *= d
    if size > np.iinfo(np.int64).max:
        raise ValueError("invalid dims: array size defined by dims is larger than the maximum possible size.")
    coords = torch.broadcast_tensors(*[c.long() for c in coords])
    res = torch.zeros(coords[0].shape, dtype=torch.int64, device=coords[0].device)
    for i in (range(len(dims)) if order == "C" else reversed(range(len(dims)))):
        c = coords[i]
        if modes[i] == "wrap":
            c = c.remainder(dims[i])
        elif modes[i] == "clip":
            c = c.clamp(0, dims[i] - 1)
        elif c.numel() and (bool((c < 0).any()) or bool((c >= dims[i]).any())):
            raise ValueError("invalid entry in coordinates array")
        res = res * dims[i] + c
    return wrap(res)


def tril_indices_from(arr, k=0):
    """Indices of the lower triangle of a 2-d array (matches numpy.tril_indices_from)."""
    if not hasattr(arr, "ndim"):
        raise AttributeError(f"'{type(arr).__name__}' object has no attribute 'ndim'")
    t = _t(arr)
    if t.ndim != 2:
        raise ValueError("input array must be 2-d")
    return tril_indices(t.shape[-2], k=k, m=t.shape[-1])


def triu_indices_from(arr, k=0):
    """Indices of the upper triangle of a 2-d array (matches numpy.triu_indices_from)."""
    if not hasattr(arr, "ndim"):
        raise AttributeError(f"'{type(arr).__name__}' object has no attribute 'ndim'")
    t = _t(arr)
    if t.ndim != 2:
        raise ValueError("input array must be 2-d")
    return triu_indices(t.shape[-2], k=k, m=t.shape[-1])


def mask_indices(n, mask_func, k=0):
    """Indices where mask_func(ones((n, n)), k) is non-zero (matches numpy.mask_indices)."""
    m = _t(mask_func(ones((n, n), dtype=int), k)) != 0
    return nonzero(wrap(m))


def ix_(*args):
    """Open mesh from 1-d sequences for cross-indexing (matches numpy.ix_; boolean inputs become
    their nonzero indices)."""
    out = []
    nd = len(args)
    for k, a in enumerate(args):
        t = _t(a) if not (isinstance(a, (list, tuple)) and len(a) == 0) else torch.zeros(0, dtype=torch.int64,
                                                                                             device=_dev())
        if t.ndim != 1:
            raise ValueError("Cross index must be 1 dimensional")
        if t.dtype == torch.bool:
            t = torch.nonzero(t).reshape(-1)
        # other dtypes are kept, floats included, as numpy.ix_ does
        out.append(wrap(t.reshape((1,) * k + (-1,) + (1,) * (nd - k - 1))))
    return tuple(out)


def tril_indices(n, k=0, m=None):
    i = torch.tril_indices(n, n if m is None else m, k, device=_dev())
    return wrap(i[0]), wrap(i[1])


def triu_indices(n, k=0, m=None):
    i = torch.triu_indices(n, n if m is None else m, k, device=_dev())
    return wrap(i[0]), wrap(i[1])


def diag_indices(n, ndim=2):
    """Indices of the main diagonal of an (n,)*ndim array (matches numpy.diag_indices)."""
    i = torch.arange(max(0, n), device=_dev())
    return (wrap(i),) * ndim


def _dev():
    return device()


def diag_indices_from(arr):
    """Indices of the main diagonal of a square n-d array (matches numpy.diag_indices_from)."""
    t = arr._t if hasattr(arr, "_t") else operand(arr)
    if t.ndim < 2:
        raise ValueError("input array must be at least 2-d")
    if len(set(t.shape)) != 1:
        raise ValueError("All dimensions of input must be of equal length")
    return diag_indices(t.shape[0], t.ndim)


def fill_diagonal(a, val, wrap=False):
    """Writes val on the main diagonal of a, in place (matches numpy.fill_diagonal: val repeats,
    tall 2-d matrices wrap every N+1 rows with wrap=True; n-d arrays need equal dimensions)."""
    t = a._t
    if t.ndim < 2:
        raise ValueError("array must be at least 2-d")
    if t.ndim == 2:
        step = t.shape[1] + 1
        end = None if wrap else t.shape[1] * t.shape[1]
    else:
        if len(set(t.shape)) != 1:
            raise ValueError("All dimensions of input must be of equal length")
        step = 1 + int(np.cumprod(t.shape[:-1]).sum())
        end = None
    a.flat[:end:step] = val


def putmask(a, mask, values):
    """a[mask] = values in place, values repeating over a's flat positions (matches numpy.putmask)."""
    t = a._t
    m = operand(mask)
    if not isinstance(m, torch.Tensor):
        m = torch.tensor(bool(m), device=t.device)
    if m.dtype != torch.bool:
        m = m != 0
    if m.ndim == 0:
        m = m.broadcast_to(t.shape)
    if tuple(m.shape) != tuple(t.shape):
        raise ValueError("putmask: mask and data must be the same size")
    if isinstance(values, (ndarray, np.ndarray)) and not np.can_cast(values.dtype, TORCH_TO_NP[t.dtype], "safe"):
        raise TypeError(f"Cannot cast array data from dtype({values.dtype!r}) to dtype({TORCH_TO_NP[t.dtype]!r}) "
                        f"according to the rule 'safe'")
    v = operand(values)
    v = (v if isinstance(v, torch.Tensor) else torch.tensor(v, device=t.device)).reshape(-1)
    n = t.numel()
    if v.numel() == 0:
        if bool(m.any()):
            raise ValueError("putmask: values must not be empty when mask selects elements")
        return
    if v.numel() < n:
        v = v.repeat((n + v.numel() - 1) // v.numel())
    full = v[:n].reshape(t.shape).to(t.dtype)
    t[m] = full[m]
