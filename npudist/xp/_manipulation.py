"""Shape manipulation, joining/splitting, indexing routines (matches numpy's of the same names)."""
import operator

import numpy as np
import torch

from ._core import OPS, normalize_index_array, result_dtype, tensor_of, as_tensor, normalize_axes, normalize_axis, operand, result, wrap
from ._dtypes import NP_TO_TORCH, TORCH_TO_NP, to_dtype
from ._core import ndarray


_t = tensor_of  # the package's one unwrapping helper


def reshape(a, shape=None, order="C", *, newshape=None, copy=None):
    """Array with the same data and a new shape (matches numpy.reshape; a view when possible)."""
    t = _t(a)
    shape = newshape if shape is None else shape
    if isinstance(shape, (int, np.integer)) or hasattr(shape, "__index__") and not isinstance(shape, (tuple, list)):
        shape = (operator.index(shape),)
    shape = tuple(operator.index(s) for s in shape)
    if order not in ("C", "F", "A"):
        raise ValueError("order must be 'C', 'F' or 'A'")
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


def transpose(a, axes=None):
    """Permuted axes (matches numpy.transpose; a view)."""
    t = _t(a)
    if axes is None:
        return wrap(t.permute(*range(t.ndim - 1, -1, -1)))
    axes = tuple(normalize_axis(x, t.ndim) for x in axes)
    if len(axes) != t.ndim or len(set(axes)) != t.ndim:
        raise ValueError("axes don't match array")
    return wrap(t.permute(*axes))


def permute_dims(a, axes):
    """Array API permute_dims (matches numpy.permute_dims)."""
    return transpose(a, axes)


def matrix_transpose(x):
    t = _t(x)
    if t.ndim < 2:
        raise ValueError("matrix_transpose needs at least 2 dimensions")
    return wrap(t.transpose(-1, -2))


def swapaxes(a, axis1, axis2):
    t = _t(a)
    return wrap(t.transpose(normalize_axis(axis1, t.ndim), normalize_axis(axis2, t.ndim)))


def moveaxis(a, source, destination):
    """Moves axes to new positions (matches numpy.moveaxis)."""
    t = _t(a)
    src = normalize_axes(source if isinstance(source, (tuple, list)) else (source,), t.ndim)
    dst = normalize_axes(destination if isinstance(destination, (tuple, list)) else (destination,), t.ndim)
    if len(src) != len(dst):
        raise ValueError("`source` and `destination` arguments must have the same number of elements")
    return wrap(torch.movedim(t, src, dst))


def rollaxis(a, axis, start=0):
    t = _t(a)
    axis = normalize_axis(axis, t.ndim)
    start = start + t.ndim if start < 0 else start
    if axis < start:
        start -= 1
    return moveaxis(a, axis, start)


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


def squeeze(a, axis=None):
    """Removes length-1 axes (matches numpy.squeeze)."""
    t = _t(a)
    if axis is None:
        return wrap(t.reshape([s for s in t.shape if s != 1]))
    axes = normalize_axes(axis, t.ndim)
    for ax in axes:
        if t.shape[ax] != 1:
            raise ValueError("cannot select an axis to squeeze out which has size not equal to one")
    return wrap(t.reshape([s for i, s in enumerate(t.shape) if i not in axes]))


def _joined(arrays, dtype, casting="same_kind"):
    ts = [_t(a) for a in arrays]
    if not ts:
        raise ValueError("need at least one array to concatenate")
    dt = to_dtype(np.result_type(*[TORCH_TO_NP[t.dtype] for t in ts])) if dtype is None else to_dtype(dtype)
    if dtype is not None and casting != "unsafe":
        for t in ts:
            if not np.can_cast(TORCH_TO_NP[t.dtype], dt, casting):
                raise TypeError(f"cannot cast array data from {TORCH_TO_NP[t.dtype]} to {dt} according to the rule "
                                f"{casting!r}")
    tdt = NP_TO_TORCH[dt]
    return [t if t.dtype == tdt else t.to(tdt) for t in ts]


def concatenate(arrays, axis=0, out=None, dtype=None, casting="same_kind"):
    """Joins arrays along an existing axis (matches numpy.concatenate; axis=None flattens)."""
    ts = _joined(arrays, dtype, casting)
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
    res = torch.cat(ts, dim=normalize_axis(axis, nd))
    return result(res, out)


def concat(arrays, /, *, axis=0):
    """Array API concat (matches numpy.concat)."""
    return concatenate(arrays, axis=axis)


def stack(arrays, axis=0, out=None, *, dtype=None, casting="same_kind"):
    """Joins arrays along a new axis (matches numpy.stack)."""
    ts = _joined(arrays, dtype, casting)
    shape = ts[0].shape
    for t in ts:
        if t.shape != shape:
            raise ValueError("all input arrays must have the same shape")
    res = torch.stack(ts, dim=normalize_axis(axis, ts[0].ndim + 1))
    return result(res, out)


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


def _seq(tup, name):
    if isinstance(tup, ndarray):
        raise TypeError(f"{name} takes a sequence of arrays")
    return list(tup)


def vstack(tup, *, dtype=None, casting="same_kind"):
    return concatenate([atleast_2d(a) for a in _seq(tup, "vstack")], 0, dtype=dtype, casting=casting)


row_stack = vstack


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


def array_split(ary, indices_or_sections, axis=0):
    """Splits into sub-arrays (views), allowing unequal division (matches numpy.array_split)."""
    t = _t(ary)
    axis = normalize_axis(axis, t.ndim)
    n = t.shape[axis]
    if isinstance(indices_or_sections, (int, np.integer)):
        sections = int(indices_or_sections)
        if sections <= 0:
            raise ValueError("number sections must be larger than 0.")
        each, extra = divmod(n, sections)
        bounds = [0]
        for i in range(sections):
            bounds.append(bounds[-1] + each + (1 if i < extra else 0))
    else:
        bounds = [0] + [int(i) for i in indices_or_sections] + [n]
    out = []
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        lo = min(max(lo + n if lo < 0 else lo, 0), n)
        hi = min(max(hi + n if hi < 0 else hi, 0), n)
        out.append(wrap(t.narrow(axis, lo, max(hi - lo, 0))))
    return out


def split(ary, indices_or_sections, axis=0):
    """Splits into equal sub-arrays (views) (matches numpy.split: unequal division raises)."""
    if isinstance(indices_or_sections, (int, np.integer)):
        t = _t(ary)
        if t.shape[normalize_axis(axis, t.ndim)] % int(indices_or_sections):
            raise ValueError("array split does not result in an equal division")
    return array_split(ary, indices_or_sections, axis)


def hsplit(ary, indices_or_sections):
    return split(ary, indices_or_sections, 1 if _t(ary).ndim > 1 else 0)


def vsplit(ary, indices_or_sections):
    return split(ary, indices_or_sections, 0)


def dsplit(ary, indices_or_sections):
    return split(ary, indices_or_sections, 2)


def unstack(x, /, *, axis=0):
    """Array API unstack: tuple of views along axis."""
    t = _t(x)
    return tuple(wrap(s) for s in t.unbind(normalize_axis(axis, t.ndim)))


def tile(A, reps):
    """Repeats the whole array (matches numpy.tile)."""
    t = _t(A)
    reps = (reps,) if isinstance(reps, (int, np.integer)) else tuple(reps)
    return wrap(torch.tile(t, tuple(int(r) for r in reps)).clone())


def repeat(a, repeats, axis=None):
    """Repeats elements (matches numpy.repeat)."""
    t = _t(a)
    if axis is None:
        t, axis = t.reshape(-1), 0
    axis = normalize_axis(axis, t.ndim)
    r = repeats._t if isinstance(repeats, ndarray) else (torch.as_tensor(repeats, device=t.device)
                                                         if not isinstance(repeats, int) else repeats)
    if isinstance(r, torch.Tensor):
        if r.is_floating_point() or r.is_complex():
            raise TypeError("repeats must be integers")
        r = r.long()
        if r.ndim == 0:
            r = int(r)
        elif bool((r < 0).any()):
            raise ValueError("repeats may not contain negative values")
    elif r < 0:
        raise ValueError("repeats may not contain negative values")
    return wrap(torch.repeat_interleave(t, r, dim=axis))


def flip(m, axis=None):
    """Reverses element order (matches numpy.flip's values; returns a copy, not a view)."""
    t = _t(m)
    return wrap(t.flip(normalize_axes(axis, t.ndim)))


def fliplr(m):
    return flip(m, 1)


def flipud(m):
    return flip(m, 0)


def roll(a, shift, axis=None):
    """Rolls elements along axes (matches numpy.roll)."""
    t = _t(a)
    if axis is None:
        return wrap(torch.roll(t.reshape(-1), int(shift) if not isinstance(shift, (tuple, list)) else sum(shift)
                               ).reshape(t.shape))
    shift = tuple(shift) if isinstance(shift, (tuple, list)) else (shift,)
    axes = tuple(axis) if isinstance(axis, (tuple, list)) else (axis,)
    if len(shift) == 1 and len(axes) > 1:
        shift = shift * len(axes)
    if len(axes) == 1 and len(shift) > 1:
        axes = axes * len(shift)
    return wrap(torch.roll(t, tuple(int(s) for s in shift), tuple(normalize_axis(x, t.ndim) for x in axes)))


def rot90(m, k=1, axes=(0, 1)):
    t = _t(m)
    return wrap(torch.rot90(t, k, [normalize_axis(x, t.ndim) for x in axes]))


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


def _pad_index(mode, n, before, after, device):
    i = torch.arange(-before, n + after, device=device)
    if mode == "edge":
        return i.clamp(0, n - 1)
    if mode == "wrap":
        return i.remainder(n)
    if mode == "reflect":
        if n == 1:
            return torch.zeros_like(i)
        p = 2 * n - 2
        j = i.remainder(p)
        return torch.where(j < n, j, p - j)
    if mode == "symmetric":
        p = 2 * n
        j = i.remainder(p)
        return torch.where(j < n, j, p - 1 - j)
    raise ValueError(f"pad mode {mode!r} is not supported; use constant, edge, reflect, symmetric or wrap")


def _pairs(value, ndim, name):
    a = np.broadcast_to(np.asarray(value), (ndim, 2)) if np.ndim(value) <= 2 else None
    if a is None:
        raise ValueError(f"{name} has an invalid shape")
    return [(a[i, 0].item(), a[i, 1].item()) for i in range(ndim)]


def pad(array, pad_width, mode="constant", **kwargs):
    """Pads an array (matches numpy.pad for modes constant, edge, reflect, symmetric, wrap)."""
    t = _t(array)
    widths = _pairs(pad_width, t.ndim, "pad_width")
    if any(int(b) < 0 or int(e) < 0 for b, e in widths):
        raise ValueError("index can't contain negative values")
    if mode == "constant":
        cv = _pairs(kwargs.get("constant_values", 0), t.ndim, "constant_values")
        shape = [s + int(b) + int(e) for s, (b, e) in zip(t.shape, widths)]
        out = torch.empty(shape, dtype=t.dtype, device=t.device)
        # fill the pad regions axis by axis (later axes overwrite corners, as NumPy does)
        region = [slice(None)] * t.ndim
        inner = tuple(slice(int(b), int(b) + s) for (b, _), s in zip(widths, t.shape))
        out[inner] = t
        for ax, ((b, e), (vb, ve)) in enumerate(zip(widths, cv)):
            sel = list(inner)
            for prev in range(ax):
                sel[prev] = slice(None)
            sel[ax] = slice(0, int(b))
            out[tuple(sel)] = vb
            sel[ax] = slice(int(b) + t.shape[ax], shape[ax])
            out[tuple(sel)] = ve
        del region
        return wrap(out)
    for ax, (b, e) in enumerate(widths):
        if b == 0 and e == 0:
            continue
        if t.shape[ax] == 0:
            raise ValueError(f"can't extend empty axis {ax} using modes other than 'constant' or 'empty'")
        t = t.index_select(ax, _pad_index(mode, t.shape[ax], int(b), int(e), t.device))
    return wrap(t)


def diagonal(a, offset=0, axis1=0, axis2=1):
    """Diagonal view (matches numpy.diagonal)."""
    t = _t(a)
    if t.ndim < 2:
        raise ValueError("diag requires an array of at least two dimensions")
    return wrap(torch.diagonal(t, offset, normalize_axis(axis1, t.ndim), normalize_axis(axis2, t.ndim)))


def trace(a, offset=0, axis1=0, axis2=1, dtype=None, out=None):
    """Sum along diagonals (matches numpy.trace)."""
    from ._reductions import sum as _sum
    return _sum(diagonal(a, offset, axis1, axis2), axis=-1, dtype=dtype, out=out)


def copyto(dst, src, casting="same_kind", where=True):
    """Copies src into dst with broadcasting (matches numpy.copyto)."""
    o = operand(src)
    st = o if isinstance(o, torch.Tensor) else torch.tensor(o, device=dst._t.device)
    if casting != "unsafe" and isinstance(o, torch.Tensor) and not np.can_cast(TORCH_TO_NP[st.dtype], dst.dtype, casting):
        raise TypeError(f"Cannot cast array data from {TORCH_TO_NP[st.dtype]} to {dst.dtype} according to the rule "
                        f"{casting!r}")
    st = st.to(dst._t.dtype).broadcast_to(dst._t.shape)
    if where is True:
        dst._t.copy_(st)
    else:
        dst._t.copy_(torch.where(_t(where), st, dst._t))


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
        if idx.dtype == torch.bool:
            keep = ~idx
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


def clip(a, a_min=None, a_max=None, out=None, *, min=None, max=None, **kwargs):
    """Limits values to [a_min, a_max] (matches numpy.clip; NumPy 2 dtype rules)."""
    lo = a_min if a_min is not None else min
    hi = a_max if a_max is not None else max
    maximum = OPS["maximum"]
    minimum = OPS["minimum"]
    r = a if isinstance(a, ndarray) else wrap(_t(a))
    if (type(lo) in (int, float, type(None)) and type(hi) in (int, float, type(None)) and (lo is not None or hi is not None)
            and not r._t.is_complex() and r._t.dtype != torch.bool
            and result_dtype(r._t, *[v for v in (lo, hi) if v is not None]) == r.dtype):
        if r._t.is_floating_point() or all(v is None or -2**63 <= v < 2**63 for v in (lo, hi)):
            from ._ufunc_kernels import _INT_TDT  # one pass with torch.clamp (same values as maximum/minimum)
            if r._t.dtype in _INT_TDT:
                info = torch.iinfo(r._t.dtype)
                for v in (lo, hi):
                    if v is not None and not info.min <= v <= info.max:
                        raise OverflowError(f"Python integer {v} out of bounds for {r.dtype}")
            res = torch.clamp(r._t, lo, hi)
            return result(res, out)
    if lo is not None:
        r = maximum(r, lo)
    if hi is not None:
        r = minimum(r, hi)
    if lo is None and hi is None:
        r = wrap(r._t.clone())
    if out is not None:
        out._t.copy_(r._t)
        return out
    return r


def shape(a):
    return tuple(_t(a).shape) if not isinstance(a, ndarray) else a.shape


def ndim(a):
    return a.ndim if isinstance(a, ndarray) else np.ndim(a)


def size(a, axis=None):
    t = _t(a)
    return t.numel() if axis is None else t.shape[axis]

