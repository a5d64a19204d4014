"""Reductions and accumulations (matches numpy's sum, prod, max, min, argmax, all, cumsum, nan*...).

Default accumulator dtypes are NumPy's: bools and signed integers sum in int64, unsigned
integers accumulate in uint64, as NumPy's do."""
import builtins as _b
import warnings

import numpy as np
import torch

from .. import _host  # NumPy's functions on npu memory first (where measured faster)
from .._convert import f64, normalize_axes, normalize_axis, tensor_of
from .._dtypes import NP_TO_TORCH, TORCH_TO_NP, complex_to_real, sum_dtype, to_dtype
from .._unsigned import UINT
from . import _array
from ._array import OPS, result, wrap

_ACC_UP = {torch.uint16: torch.int64, torch.uint32: torch.int64, torch.uint64: torch.int64, torch.bool: torch.int64, torch.int8: torch.int64, torch.int16: torch.int64, torch.int32: torch.int64,
           torch.uint8: torch.int64}


_t = tensor_of  # the package's one unwrapping helper


_out = result


def _mask(t, where, fill):
    if where is True:
        return t
    m = _t(where)
    if m.dtype != torch.bool:
        raise TypeError("where= must be a boolean array")
    return torch.where(m, t, torch.tensor(fill, dtype=t.dtype, device=t.device))


def _reduce_dims(fn, t, axes, keepdims):
    """Reduction fn(tensor, dim:int, keepdim) applied over several axes (moved last and merged)."""
    nd = t.ndim
    if len(axes) == 1:
        return fn(t, axes[0], keepdims)
    rest = [i for i in range(nd) if i not in axes]
    p = t.permute(*rest, *axes)
    merged = 1
    for i in axes:
        merged *= t.shape[i]
    p = p.reshape(tuple(p.shape[:len(rest)]) + (merged,))   # (not -1: ambiguous when a kept axis is 0)
    r = fn(p, -1, False)
    if keepdims:
        r = r.reshape(tuple(1 if i in axes else t.shape[i] for i in range(nd)))
    return r


@_host.numpy_first(np.sum, _array.array_type, big=True, fp=_host.FP_IF_FLOAT)
def sum(a, axis=None, dtype=None, out=None, keepdims=False, initial=0, where=True):
    """Sum over axes (matches numpy.sum: ints/bools accumulate in int64; axis int/tuple/None)."""
    t = _t(a)
    dt = sum_dtype(TORCH_TO_NP[t.dtype]) if dtype is None else to_dtype(dtype)
    tdt = NP_TO_TORCH[dt]
    t = _mask(t, where, 0)
    axes = normalize_axes(axis, t.ndim)
    if not axes:
        r = t.to(tdt, copy=True)
    elif tdt == torch.bool:
        r = t.any(dim=axes, keepdim=keepdims) if t.ndim else t.clone()
    else:
        # unsigned sums accumulate in int64 bits: the same bits as NumPy's modular uint64 sum
        acc = torch.int64 if tdt in UINT else tdt
        r = f64(torch.sum, t, dim=axes, keepdim=keepdims, dtype=acc)
        r = r if acc is tdt else r.to(tdt)
    if initial is not None and initial != 0:
        r = r + initial
    return _out(r, out)


def prod(a, axis=None, dtype=None, out=None, keepdims=False, initial=1, where=True):
    """Product over axes (matches numpy.prod)."""
    t = _t(a)
    dt = sum_dtype(TORCH_TO_NP[t.dtype]) if dtype is None else to_dtype(dtype)
    tdt = NP_TO_TORCH[dt]
    acc = torch.int64 if tdt in UINT else tdt     # unsigned: the same bits, modulo 2**64
    t = _mask(t, where, 1).to(acc)
    axes = normalize_axes(axis, t.ndim)
    if not axes:
        r = t.clone()
    else:
        r = _reduce_dims(lambda x, d, k: f64(torch.prod, x, d, keepdim=k, dtype=x.dtype), t, axes, keepdims)
    r = r if acc is tdt else r.to(tdt)
    if initial is not None and initial != 1:
        r = r * initial
    return _out(r, out)


def _complex_extreme(x, dim, keepdim, is_max, skip_nan):
    """max/min of a complex tensor along one dim in NumPy's order (real part, then imaginary part).
    A slice holding a NaN gives its first NaN (NumPy's maximum/minimum propagate it); with
    skip_nan (fmax/fmin, nanmax/nanmin) NaNs are ignored and only an all-NaN slice gives its first."""
    isn = torch.isnan(x)
    fill = torch.tensor(float("-inf") if is_max else float("inf"), dtype=x.real.dtype, device=x.device)
    ext = torch.amax if is_max else torch.amin
    re = torch.where(isn, fill, x.real)
    mr = ext(re, dim, keepdim=True)
    im = torch.where((re == mr) & ~isn, x.imag, fill)
    r = torch.complex(mr, ext(im, dim, keepdim=True))
    has_nan = isn.any(dim, keepdim=True) if not skip_nan else isn.all(dim, keepdim=True)
    first_nan = torch.gather(x, dim, isn.to(torch.uint8).argmax(dim, keepdim=True))
    r = torch.where(has_nan, first_nan, r)
    return r if keepdim else r.squeeze(dim)


def _extreme(name, a, axis, out, keepdims, initial, where, skip_nan=False):
    t = _t(a)
    axes = normalize_axes(axis, t.ndim)
    is_max = name in ("max", "amax")
    if t.is_complex():
        if where is not True and initial is None:
            raise ValueError(f"reduction operation '{'maximum' if is_max else 'minimum'}' does not have an "
                             f"identity, so to use a where mask one has to specify 'initial'")
        t = _mask(t, where, initial) if where is not True else t
        if _b.any(t.shape[ax] == 0 for ax in axes) and initial is None:
            raise ValueError(f"zero-size array to reduction operation {'maximum' if is_max else 'minimum'} which "
                             f"has no identity")
        if not axes:
            return _out(t.clone(), out)
        if initial is not None:   # the initial value joins every slice as one more element
            t = torch.cat([t, torch.full(tuple(1 if i == axes[0] else n for i, n in enumerate(t.shape)),
                                         complex(initial), dtype=t.dtype, device=t.device)], axes[0])
        r = _reduce_dims(lambda x, d, k: _complex_extreme(x, d, k, is_max, skip_nan), t, axes, keepdims)
        return _out(r, out)
    if where is not True:
        if initial is None:
            raise ValueError(f"reduction operation '{'maximum' if is_max else 'minimum'}' does not have an identity, "
                             f"so to use a where mask one has to specify 'initial'")
        t = _mask(t, where, initial)
    if _b.any(t.shape[ax] == 0 for ax in axes) and initial is None:
        raise ValueError(f"zero-size array to reduction operation {'maximum' if is_max else 'minimum'} which has "
                         f"no identity")
    if not axes:
        r = t.clone()
    elif t.numel() == 0:
        shape = tuple(1 if i in axes else s for i, s in enumerate(t.shape)) if keepdims else \
            tuple(s for i, s in enumerate(t.shape) if i not in axes)
        # reduced axes are not empty (checked above), so the result is: nothing to fill without initial
        r = (torch.full(shape, initial, dtype=t.dtype, device=t.device) if initial is not None else
             torch.empty(shape, dtype=t.dtype, device=t.device))
        initial = None
    else:
        src = t if t.dtype != torch.bool else t.to(torch.uint8)
        r = (torch.amax if is_max else torch.amin)(src, dim=axes, keepdim=keepdims).to(t.dtype)
    if initial is not None:
        init = torch.tensor(initial, device=t.device).to(t.dtype)
        r = torch.maximum(r, init) if is_max else torch.minimum(r, init)
    return _out(r, out)


@_host.numpy_first(np.max, _array.array_type, big=True, fp=_host.FP_IF_FLOAT)
def max(a, axis=None, out=None, keepdims=False, initial=None, where=True):
    """Maximum over axes; NaN propagates (matches numpy.max); empty without initial raises ValueError."""
    return _extreme("max", a, axis, out, keepdims, initial, where)


@_host.numpy_first(np.min, _array.array_type, big=True, fp=_host.FP_IF_FLOAT)
def min(a, axis=None, out=None, keepdims=False, initial=None, where=True):
    """Minimum over axes; NaN propagates (matches numpy.min); empty without initial raises ValueError."""
    return _extreme("min", a, axis, out, keepdims, initial, where)


amax = max
amin = min


def _arg(name, a, axis, out, keepdims, nan):
    t = _t(a)
    if axis is None:
        flat = t.reshape(-1)
        dim = None
        n = flat.numel()
    else:
        dim = normalize_axis(axis, t.ndim)
        n = t.shape[dim]
        flat = t
    if n == 0:
        raise ValueError(f"attempt to get {name} of an empty sequence")
    if flat.dtype == torch.bool:
        flat = flat.to(torch.uint8)
    is_max = "max" in name
    if nan and flat.is_floating_point():  # nanarg*: ignore NaN, all-NaN slices raise
        isn = torch.isnan(flat)
        allnan = isn.all() if dim is None else isn.all(dim)
        if bool(allnan.any()):
            raise ValueError("All-NaN slice encountered")
        flat = torch.where(isn, torch.tensor(float("-inf") if is_max else float("inf"), dtype=flat.dtype,
                                             device=flat.device), flat)
    if flat.is_complex():   # first index of the extreme in NumPy's complex order
        d = dim if dim is not None else 0
        if nan and bool(torch.isnan(flat).all(d).any()):
            raise ValueError("All-NaN slice encountered")
        ext = _complex_extreme(flat, d, True, is_max, nan)
        hit = (flat == ext) | (torch.isnan(flat) & torch.isnan(ext)) if not nan else (flat == ext)
        return _arg_out(hit.to(torch.uint8).argmax(d), t, dim, keepdims, out)
    # torch.argmax/argmin return the first NaN, as NumPy does
    r = (torch.argmax if is_max else torch.argmin)(flat, dim=dim if dim is not None else 0)
    return _arg_out(r, t, dim, keepdims, out)


def _arg_out(r, t, dim, keepdims, out):
    if keepdims:
        r = r.reshape((1,) * t.ndim) if dim is None else r.unsqueeze(dim)
    return _out(r, out)


@_host.numpy_first(np.argmax, _array.array_type, big=True, fp=_host.FP_IF_FLOAT)
def argmax(a, axis=None, out=None, *, keepdims=False):
    """Index of the maximum, first occurrence, NaN first (matches numpy.argmax; int64)."""
    return _arg("argmax", a, axis, out, keepdims, False)


@_host.numpy_first(np.argmin, _array.array_type, big=True, fp=_host.FP_IF_FLOAT)
def argmin(a, axis=None, out=None, *, keepdims=False):
    """Index of the minimum, first occurrence, NaN first (matches numpy.argmin; int64)."""
    return _arg("argmin", a, axis, out, keepdims, False)


def nanargmax(a, axis=None, out=None, *, keepdims=False):
    return _arg("nanargmax", a, axis, out, keepdims, True)


def nanargmin(a, axis=None, out=None, *, keepdims=False):
    return _arg("nanargmin", a, axis, out, keepdims, True)


def _logic(fn, a, axis, out, keepdims, where, fill):
    t = _t(a)
    b = t if t.dtype == torch.bool else t != 0
    b = _mask(b, where, fill)
    axes = normalize_axes(axis, b.ndim)
    r = b.clone() if not axes else fn(b, dim=axes, keepdim=keepdims)
    return _out(r, out)


def all(a, axis=None, out=None, keepdims=False, *, where=True):
    """True where every element is non-zero (matches numpy.all)."""
    return _logic(torch.all, a, axis, out, keepdims, where, True)


def any(a, axis=None, out=None, keepdims=False, *, where=True):
    """True where some element is non-zero (matches numpy.any)."""
    return _logic(torch.any, a, axis, out, keepdims, where, False)


def _cum(fn, a, axis, dtype, out, ufunc_dtype):
    t = _t(a)
    if axis is None:
        t, axis = t.reshape(-1), 0
    axis = normalize_axis(axis, t.ndim)
    if dtype is not None:
        dt = to_dtype(dtype)
    else:
        dt = TORCH_TO_NP[t.dtype] if ufunc_dtype else sum_dtype(TORCH_TO_NP[t.dtype])
    tdt = NP_TO_TORCH[dt]
    src = t.to(_ACC_UP.get(tdt, tdt))
    r = f64(fn, src, axis).to(tdt)
    return _out(r, out)


@_host.numpy_first(np.cumsum, _array.array_type, big=_host.ALWAYS, fp=_host.FP_IF_FLOAT)   # NumPy's sequential order at any size and thread count
def cumsum(a, axis=None, dtype=None, out=None):
    """Cumulative sum (matches numpy.cumsum; axis None flattens)."""
    return _cum(torch.cumsum, a, axis, dtype, out, False)


def cumprod(a, axis=None, dtype=None, out=None):
    """Cumulative product (matches numpy.cumprod)."""
    return _cum(torch.cumprod, a, axis, dtype, out, False)


def _cumulative(fn, x, axis, dtype, include_initial, initial, out):
    t = _t(x)
    if axis is None:
        if t.ndim > 1:
            raise ValueError("For arrays which have more than one dimension ``axis`` argument is required.")
        axis = 0
    if t.ndim == 0:
        t = t.reshape(1)       # NumPy takes a 0-d array as a 1-element one
    r = fn(wrap(t), axis=axis, dtype=dtype)
    if include_initial:
        axis = normalize_axis(axis, t.ndim)
        shape = list(r._t.shape)
        shape[axis] = 1
        r = wrap(torch.cat([torch.full(shape, initial, dtype=r._t.dtype, device=t.device), r._t], dim=axis))
    if out is None:
        return r
    if not isinstance(out, _array.ARRAY):
        raise TypeError(f"out must be an xp.ndarray, got {type(out).__name__}")
    res = r._t
    if tuple(out._t.shape) != tuple(res.shape):
        raise ValueError(f"out has shape {tuple(out._t.shape)}, the result has {tuple(res.shape)}")
    out._t.copy_(complex_to_real(res, out._t.dtype, stacklevel=3))  # NumPy casts into out unsafely
    return out


def cumulative_sum(x, /, *, axis=None, dtype=None, out=None, include_initial=False):
    """Array API cumulative_sum (matches numpy.cumulative_sum: a 0-d x counts as 1-d; ``out`` of
    the result's shape and any dtype, cast unsafely, ValueError for another shape)."""
    return _cumulative(cumsum, x, axis, dtype, include_initial, 0, out)


def cumulative_prod(x, /, *, axis=None, dtype=None, out=None, include_initial=False):
    """Array API cumulative_prod (matches numpy.cumulative_prod; see cumulative_sum)."""
    return _cumulative(cumprod, x, axis, dtype, include_initial, 1, out)


def cum_extreme(name, a, axis=0, dtype=None, out=None):
    t = _t(a)
    if axis is None:
        t, axis = t.reshape(-1), 0
    axis = normalize_axis(axis, t.ndim)
    if name in ("logical_and", "logical_or"):
        t = t != 0 if t.dtype != torch.bool else t
    src = t.to(torch.uint8) if t.dtype == torch.bool else t
    fn = torch.cummax if name in ("maximum", "logical_or") else torch.cummin
    r = fn(src, axis).values.to(t.dtype)
    if dtype is not None:
        r = r.to(NP_TO_TORCH[to_dtype(dtype)])
    return _out(r, out)


def bitwise_reduce(uf, a, axis=0, dtype=None, out=None, keepdims=False):
    """bitwise_and/or/xor.reduce: a fold over the axis (one kernel per element of the axis)."""
    t = _t(a)
    if t.is_floating_point() or t.is_complex():   # NumPy has no loop for these (TypeError, as its)
        raise TypeError(f"ufunc '{uf.__name__}' not supported for the input types, and the inputs could not be "
                        f"safely coerced to any supported types according to the casting rule ''safe''")
    if axis is None:
        t, axis = t.reshape(-1), 0
    axis = normalize_axis(axis, t.ndim)
    ident = {"bitwise_and": -1, "bitwise_or": 0, "bitwise_xor": 0}[uf.__name__]
    fn = {"bitwise_and": torch.bitwise_and, "bitwise_or": torch.bitwise_or, "bitwise_xor": torch.bitwise_xor}[uf.__name__]
    shape = tuple(s for i, s in enumerate(t.shape) if i != axis)
    r = torch.full(shape, ident if t.dtype != torch.bool else bool(ident), dtype=t.dtype, device=t.device)
    for s in t.unbind(axis):
        r = fn(r, s)
    if keepdims:
        r = r.unsqueeze(axis)
    return _out(r, out)


def _nan_fill(a, value):
    t = _t(a)
    if t.is_floating_point() or t.is_complex():
        return wrap(torch.where(torch.isnan(t), torch.tensor(value, dtype=t.dtype, device=t.device), t))
    return wrap(t)


def nansum(a, axis=None, dtype=None, out=None, keepdims=False, initial=0, where=True):
    """Sum treating NaN as zero (matches numpy.nansum)."""
    return sum(_nan_fill(a, 0), axis, dtype, out, keepdims, initial, where)


def nanprod(a, axis=None, dtype=None, out=None, keepdims=False, initial=1, where=True):
    """Product treating NaN as one (matches numpy.nanprod)."""
    return prod(_nan_fill(a, 1), axis, dtype, out, keepdims, initial, where)


def _nanextreme(is_max, a, axis, out, keepdims, initial, where):
    t = _t(a)
    if t.is_complex():
        if initial is None and t.numel() and bool(torch.isnan(t).all()
                                                 if axis is None else _logic(torch.all, wrap(torch.isnan(t)), axis,
                                                                             None, False, True, True)._t.any()):
            warnings.warn("All-NaN slice encountered", RuntimeWarning, stacklevel=3)
        return _extreme("max" if is_max else "min", a, axis, out, keepdims, initial, where, skip_nan=True)
    if not t.is_floating_point():
        return _extreme("max" if is_max else "min", a, axis, out, keepdims, initial, where)
    isn = torch.isnan(t)
    filled = torch.where(isn, torch.tensor(float("-inf") if is_max else float("inf"), dtype=t.dtype, device=t.device), t)
    r = _extreme("max" if is_max else "min", wrap(filled), axis, None, keepdims, initial, where)
    allnan = _logic(torch.all, wrap(isn), axis, None, keepdims, True, True)._t
    if initial is None:
        if bool(allnan.any()):
            warnings.warn("All-NaN slice encountered", RuntimeWarning, stacklevel=3)
        r = wrap(torch.where(allnan, torch.tensor(float("nan"), dtype=t.dtype, device=t.device), r._t))
    return _out(r._t, out)


def nanmax(a, axis=None, out=None, keepdims=False, initial=None, where=True):
    """Maximum ignoring NaN; all-NaN slices give NaN (matches numpy.nanmax)."""
    return _nanextreme(True, a, axis, out, keepdims, initial, where)


def nanmin(a, axis=None, out=None, keepdims=False, initial=None, where=True):
    """Minimum ignoring NaN; all-NaN slices give NaN (matches numpy.nanmin)."""
    return _nanextreme(False, a, axis, out, keepdims, initial, where)


def nancumsum(a, axis=None, dtype=None, out=None):
    return cumsum(_nan_fill(a, 0), axis, dtype, out)


def nancumprod(a, axis=None, dtype=None, out=None):
    return cumprod(_nan_fill(a, 1), axis, dtype, out)


def ptp(a, axis=None, out=None, keepdims=False):
    """max - min (matches numpy.ptp)."""
    subtract = OPS["subtract"]
    return subtract(max(a, axis, keepdims=keepdims), min(a, axis, keepdims=keepdims), out=out)


def diff(a, n=1, axis=-1, prepend=None, append=None):
    """n-th discrete difference (matches numpy.diff; bools use not_equal)."""
    t = _t(a)
    if n < 0:
        raise ValueError(f"order must be non-negative but got {n}")
    if t.ndim == 0:
        raise ValueError("diff requires input that is at least one dimensional")
    axis = normalize_axis(axis, t.ndim)

    def ext(v):
        if v is None:
            return None
        vt = _t(v)
        if vt.ndim == 0:
            shape = list(t.shape)
            shape[axis] = 1
            vt = vt.expand(shape)
        return vt
    pre, app = ext(prepend), ext(append)
    parts = [x for x in (pre, t, app) if x is not None]
    if len(parts) > 1:
        dt = NP_TO_TORCH[to_dtype(np.result_type(*[TORCH_TO_NP[x.dtype] for x in parts]))]
        t = torch.cat([x.to(dt) for x in parts], dim=axis)
    for _ in range(n):
        hi = t.narrow(axis, 1, _b.max(t.shape[axis] - 1, 0))
        lo = t.narrow(axis, 0, _b.max(t.shape[axis] - 1, 0))
        t = hi != lo if t.dtype == torch.bool else f64(torch.sub, hi, lo)
    return wrap(t)


def ediff1d(ary, to_end=None, to_begin=None):
    t = _t(ary).reshape(-1)
    r = t[1:] - t[:-1]
    parts = []
    if to_begin is not None:
        parts.append(_t(to_begin).reshape(-1).to(t.dtype))
    parts.append(r)
    if to_end is not None:
        parts.append(_t(to_end).reshape(-1).to(t.dtype))
    return wrap(torch.cat(parts))
