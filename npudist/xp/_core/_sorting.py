"""Sorting, searching, unique and set operations (matches numpy's functions of the same names).

Sorting is stable and NaN sorts last, as in NumPy. Complex values sort lexicographically (real,
then imaginary), as in NumPy."""
from collections import namedtuple

import numpy as np
import torch

from .. import _host  # NumPy's functions on npu memory first (where measured faster)
from .._convert import normalize_axis, tensor_of
from .._dtypes import NP_TO_TORCH, TORCH_TO_NP, to_dtype
from . import _array
from ._array import wrap

_t = tensor_of  # the package's one unwrapping helper


_KEY_INT = {torch.float16: torch.int16, torch.float32: torch.int32, torch.float64: torch.int64}


def _float_keys(t):
    """Order-preserving integer keys of a float tensor (NaN last, -0.0 equal to +0.0): PyTorch's
    CPU sort of integers is several times faster than its sort of floats."""
    it = _KEY_INT[t.dtype]
    nan = torch.tensor(float("nan"), dtype=t.dtype, device=t.device)
    bits = torch.where(torch.isnan(t), nan.abs(), t + 0.0).view(it)  # t + 0.0: -0.0 becomes +0.0 (ties, as NumPy)
    nbits = bits.element_size() * 8
    return bits ^ ((bits >> (nbits - 1)) & torch.iinfo(it).max)


def _argsort_t(t, dim, descending=False):
    if t.dtype in _KEY_INT and not descending and t.numel() > 4096:
        return torch.argsort(_float_keys(t), dim=dim, stable=True)
    if t.is_complex():
        # NumPy's complex order: R + Rj, R + nanj, nan + Rj, nan + nanj (each group lexicographic)
        i1 = torch.argsort(t.imag, dim=dim, stable=True, descending=descending)
        re = torch.gather(t.real, dim, i1)
        i2 = torch.argsort(re, dim=dim, stable=True, descending=descending)
        idx = torch.gather(i1, dim, i2)
        x = torch.gather(t, dim, idx)
        cls = torch.isnan(x.real).to(torch.int8) * 2 + torch.isnan(x.imag).to(torch.int8)
        if not bool(cls.any()):
            return idx
        i3 = torch.argsort(cls, dim=dim, stable=True, descending=descending)
        return torch.gather(idx, dim, i3)
    return torch.argsort(t, dim=dim, stable=True, descending=descending)


def _check_kind(kind):
    """NumPy's sort kinds (any case, first letter decides): quicksort, heapsort, mergesort, stable.
    xp's sort is always stable, which every kind allows."""
    if kind is not None and (not isinstance(kind, str) or kind[:1].lower() not in ("q", "h", "m", "s")):
        raise ValueError(f"sort kind must be one of 'quick', 'heap', or 'stable' (got {kind!r})")


def _axis(t, axis):
    if axis is None:
        return t.reshape(-1), 0
    if t.ndim == 0:
        raise np.exceptions.AxisError(axis, 0)
    return t, normalize_axis(axis, t.ndim)


@_host.numpy_first(np.sort, _array.array_type, unsigned=False, fp=_host.FP_NEVER)   # (no FP state to set); PyTorch's sort is the faster side at 1M
def sort(a, axis=-1, kind=None, order=None, *, stable=None, descending=False):
    """Sorted copy (matches numpy.sort; stable; NaN last; axis=None flattens).
    ``descending=True`` is the Array API's option (equal elements keep their order)."""
    _check_kind(kind)
    t, axis = _axis(_t(a), axis)
    if order is not None:
        raise ValueError("order= applies to structured arrays, which xp does not have")
    if t.is_complex():
        return wrap(torch.gather(t, axis, _argsort_t(t, axis, descending)))
    if t.dtype in _KEY_INT and not descending and t.numel() > 4096:
        return wrap(torch.gather(t, axis, torch.sort(_float_keys(t), dim=axis).indices))
    # values only: stability is unobservable except for descending ties of -0.0/+0.0 and NaNs
    return wrap(torch.sort(t, dim=axis, stable=descending, descending=descending).values)


@_host.numpy_first(np.argsort, _array.array_type, unsigned=False, fp=_host.FP_NEVER)   # (no FP state to set); PyTorch's sort is the faster side at 1M
def argsort(a, axis=-1, kind=None, order=None, *, stable=None, descending=False):
    """Indices that sort the array (matches numpy.argsort; stable; int64; a 0-d array sorts as
    a 1-element 1-d one, as NumPy's argsort does)."""
    _check_kind(kind)
    t = _t(a)
    t, axis = _axis(t.reshape(1) if t.ndim == 0 else t, axis)
    return wrap(_argsort_t(t, axis, descending))


def lexsort(keys, axis=-1):
    """Indirect stable sort by several keys, the last key primary (matches numpy.lexsort)."""
    if isinstance(keys, _array.ARRAY):
        ks = [keys._t[i] for i in range(keys.shape[0])]
    else:
        ks = [_t(k) for k in keys]
    if not ks:
        raise TypeError("need sequence of keys with len > 0 in lexsort")
    shape = torch.broadcast_shapes(*[k.shape for k in ks])
    if not shape:      # 0-d keys (a 1-d keys array): one element, index 0, as NumPy
        return wrap(torch.zeros((), dtype=torch.int64, device=ks[0].device))
    ks = [k.broadcast_to(shape) for k in ks]
    axis = normalize_axis(axis, len(shape))
    idx = _argsort_t(ks[0], axis)
    for k in ks[1:]:
        idx = torch.gather(idx, axis, _argsort_t(torch.gather(k, axis, idx), axis))
    return wrap(idx)


def searchsorted(a, v, side="left", sorter=None):
    """Insertion indices keeping a sorted (matches numpy.searchsorted; a is 1-D; int64)."""
    at = _t(a)
    if at.ndim != 1:
        raise ValueError("searchsorted: the sorted array must be 1-D")
    if side not in ("left", "right"):
        raise ValueError(f"side must be 'left' or 'right', got {side!r}")
    scalar = not isinstance(v, (_array.ARRAY, np.ndarray, list, tuple, torch.Tensor))
    vt = _t(v)
    dt = NP_TO_TORCH[to_dtype(np.result_type(TORCH_TO_NP[at.dtype], TORCH_TO_NP[vt.dtype]))]
    if dt == torch.bool:
        dt = torch.uint8
    s = None
    if sorter is not None:
        s = _t(sorter)
        if s.is_floating_point() or s.is_complex() or s.dtype == torch.bool:
            raise TypeError("sorter must only contain integers")
        if s.numel() != at.numel():
            raise ValueError("sorter.size must equal a.size")
        s = s.long()
    at, vt = at.to(dt), vt.to(dt)
    if dt.is_complex:   # PyTorch has no complex searchsorted: search ranks in NumPy's complex order
        if s is not None:
            at, s = at[s], None
        at, vt = _lex_ranks(at, vt)
    elif dt in _KEY_INT:   # order-preserving integer keys: NaN after every number, as NumPy orders it
        at, vt = _float_keys(at), _float_keys(vt)
    r = torch.searchsorted(at.contiguous(), vt.reshape(-1).contiguous() if vt.ndim == 0 else vt.contiguous(),
                           right=side == "right", sorter=s)
    return wrap(r.reshape(()) if vt.ndim == 0 else r) if not scalar else wrap(r.reshape(()))


def _lex_ranks(a, v):
    """Integer ranks of two complex tensors in NumPy's order (real part, then imaginary part; NaNs
    last), equal values sharing a rank: searching ranks is searching the complex values."""
    both = torch.cat([a.reshape(-1), v.reshape(-1)])
    re, im = both.real.contiguous(), both.imag.contiguous()
    order = torch.sort(im, stable=True).indices
    order = order[torch.sort(re[order], stable=True).indices]
    srt = both[order]
    new = torch.ones(srt.shape, dtype=torch.int64, device=srt.device)
    if srt.numel() > 1:
        new[1:] = (srt[1:] != srt[:-1]).long()
    ranks = torch.empty_like(new)
    ranks[order] = torch.cumsum(new, 0)
    return ranks[:a.numel()].reshape(a.shape), ranks[a.numel():].reshape(v.shape)


def sort_complex(a):
    """Sorted copy as a complex array, real part first (matches numpy.sort_complex: int8, int16,
    uint8 and uint16 give complex64, other real types complex128)."""
    t = _t(a)
    if not t.is_complex():
        small = t.dtype in (torch.int8, torch.int16, torch.uint8, torch.uint16)
        t = t.to(torch.complex64 if small else torch.complex128)
    return sort(wrap(t))


def partition(a, kth, axis=-1, kind="introselect", order=None):
    """Array with the kth element in sorted position, smaller before, larger after (numpy.partition's
    contract; the arrangement within the two sides is sorted here)."""
    t, ax = _axis(_t(a), axis)
    _check_kth(kth, t.shape[ax])
    return sort(wrap(t), axis=ax)


def argpartition(a, kth, axis=-1, kind="introselect", order=None):
    t, ax = _axis(_t(a), axis)
    _check_kth(kth, t.shape[ax])
    return argsort(wrap(t), axis=ax)


def _check_kth(kth, n):
    for k in np.atleast_1d(np.asarray(kth._t.cpu() if isinstance(kth, _array.ARRAY) else kth)):
        if not -n <= int(k) < n:
            raise ValueError(f"kth(={int(k)}) out of bounds ({n})")


def _unique_flat(flat, equal_nan):
    """Sorted unique of a 1-D tensor: values, first indices, inverse, counts."""
    n = flat.numel()
    perm = _argsort_t(flat, 0)
    s = flat[perm]
    if n == 0:
        e = torch.zeros(0, dtype=torch.int64, device=flat.device)
        return s, e, e, e
    neq = s[1:] != s[:-1]
    if equal_nan and (s.is_floating_point() or s.is_complex()):
        nan = torch.isnan(s)
        neq = neq & ~(nan[1:] & nan[:-1])
    start = torch.cat([torch.ones(1, dtype=torch.bool, device=flat.device), neq])
    group = torch.cumsum(start, 0) - 1
    inverse = torch.empty(n, dtype=torch.int64, device=flat.device)
    inverse[perm] = group
    starts = torch.nonzero(start).reshape(-1)
    counts = torch.diff(torch.cat([starts, torch.tensor([n], device=flat.device)]))
    return s[start], perm[start], inverse, counts


@_host.numpy_first(np.unique, _array.array_type, big=True)
def unique(ar, return_index=False, return_inverse=False, return_counts=False, axis=None, *, equal_nan=True,
           sorted=True):
    """Sorted unique elements, optionally first indices, inverse indices and counts (matches
    numpy.unique, NumPy 2: the inverse has the input's shape when axis is None)."""
    t = _t(ar)
    if axis is None:
        vals, idx, inv, cnt = _unique_flat(t.reshape(-1), equal_nan)
        inv = inv.reshape(t.shape)
    else:
        axis = normalize_axis(axis, t.ndim)
        if t.is_complex():
            raise TypeError("unique(axis=...) of complex arrays is not supported")
        moved = torch.movedim(t, axis, 0)
        n = moved.shape[0]
        if n == 0 or moved[0].numel() == 0:
            # empty slices along axis are all equal (NumPy: one unique slice, or none when there are none)
            k = min(n, 1)
            z = torch.zeros(k, dtype=torch.int64, device=t.device)
            vals, idx, cnt = torch.movedim(moved[:k], 0, axis), z, torch.full((k,), n, dtype=torch.int64, device=t.device)
            inv = torch.zeros(n, dtype=torch.int64, device=t.device)
        else:
            rows = moved.reshape(n, -1)
            vals_r, inv, cnt = torch.unique(rows, dim=0, return_inverse=True, return_counts=True)
            idx = torch.full((vals_r.shape[0],), n, dtype=torch.int64, device=t.device)
            idx = idx.scatter_reduce(0, inv, torch.arange(n, device=t.device), reduce="amin")
            vals = torch.movedim(vals_r.reshape((vals_r.shape[0],) + tuple(moved.shape[1:])), 0, axis)
    res = [wrap(vals)]
    if return_index:
        res.append(wrap(idx))
    if return_inverse:
        res.append(wrap(inv))
    if return_counts:
        res.append(wrap(cnt))
    return res[0] if len(res) == 1 else tuple(res)


UniqueAllResult = namedtuple("UniqueAllResult", ["values", "indices", "inverse_indices", "counts"])
UniqueCountsResult = namedtuple("UniqueCountsResult", ["values", "counts"])
UniqueInverseResult = namedtuple("UniqueInverseResult", ["values", "inverse_indices"])


def unique_all(x):
    """Array API unique_all: values, first indices, inverse (x's shape), counts; NaNs distinct."""
    v, i, inv, c = unique(x, True, True, True, equal_nan=False)
    return UniqueAllResult(v, i, inv, c)


def unique_counts(x):
    """Array API unique_counts (NaNs distinct)."""
    v, c = unique(x, return_counts=True, equal_nan=False)
    return UniqueCountsResult(v, c)


def unique_inverse(x):
    """Array API unique_inverse (inverse has x's shape; NaNs distinct)."""
    v, inv = unique(x, return_inverse=True, equal_nan=False)
    return UniqueInverseResult(v, inv)


def unique_values(x):
    """Array API unique_values (NaNs distinct)."""
    return unique(x, equal_nan=False)


def _common(a, b):
    at, bt = _t(a).reshape(-1), _t(b).reshape(-1)
    dt = NP_TO_TORCH[to_dtype(np.result_type(TORCH_TO_NP[at.dtype], TORCH_TO_NP[bt.dtype]))]
    return at.to(dt), bt.to(dt)


def _isin_t(et, tt):
    """torch.isin for every dtype: complex through ranks in NumPy's order, bool as uint8."""
    if et.is_complex():
        et, tt = _lex_ranks(et, tt)
    elif et.dtype == torch.bool:
        et, tt = et.to(torch.uint8), tt.to(torch.uint8)
    return torch.isin(et, tt)


def isin(element, test_elements, assume_unique=False, invert=False, *, kind=None):
    """Elementwise membership (matches numpy.isin; bool, element's shape)."""
    e = _t(element)
    et, tt = _common(e, test_elements)
    r = _isin_t(et, tt).reshape(e.shape)
    return wrap(~r if invert else r)


def in1d(ar1, ar2, assume_unique=False, invert=False, *, kind=None):
    return wrap(isin(ar1, ar2, invert=invert)._t.reshape(-1))


def intersect1d(ar1, ar2, assume_unique=False, return_indices=False):
    """Sorted common unique values (matches numpy.intersect1d, with return_indices: the first
    index of each in ar1 and ar2). Every dtype, complex in NumPy's order and bool included: the
    unique values of both are sorted together and equal neighbours are the common ones."""
    a, b = _common(ar1, ar2)
    if assume_unique:
        ua, ub = a, b
    else:
        ua, ia = _unique_flat(a, True)[:2]
        ub, ib = _unique_flat(b, True)[:2]
    order = _argsort_t(torch.cat([ua, ub]), 0)
    aux = torch.cat([ua, ub])[order]
    mask = aux[1:] == aux[:-1]
    common = aux[:-1][mask]
    if not return_indices:
        return wrap(common)
    i1 = order[:-1][mask]
    i2 = order[1:][mask] - ua.numel()
    if not assume_unique:
        i1, i2 = ia[i1], ib[i2]
    return wrap(common), wrap(i1), wrap(i2)


def union1d(ar1, ar2):
    """Sorted unique values of both (matches numpy.union1d)."""
    a, b = _common(ar1, ar2)
    return wrap(_unique_flat(torch.cat([a, b]), True)[0])


def setdiff1d(ar1, ar2, assume_unique=False):
    """Sorted unique values of ar1 not in ar2 (matches numpy.setdiff1d)."""
    a, b = _common(ar1, ar2)
    ua = a if assume_unique else _unique_flat(a, True)[0]
    return wrap(ua[~_isin_t(ua, b)].to(_t(ar1).dtype))    # NumPy keeps ar1's dtype


def setxor1d(ar1, ar2, assume_unique=False):
    """Sorted values in exactly one of the inputs (matches numpy.setxor1d)."""
    a, b = _common(ar1, ar2)
    ua = a if assume_unique else _unique_flat(a, True)[0]
    ub = b if assume_unique else _unique_flat(b, True)[0]
    aux = torch.cat([ua, ub])
    if aux.numel() == 0:
        return wrap(aux)
    aux = aux[_argsort_t(aux, 0)]        # sorted together (complex in NumPy's order, bool too)
    edge = torch.ones(1, dtype=torch.bool, device=aux.device)
    flag = torch.cat([edge, aux[1:] != aux[:-1], edge])
    return wrap(aux[flag[1:] & flag[:-1]])   # the values with no equal neighbour
