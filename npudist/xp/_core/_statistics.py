"""Statistics (matches numpy.mean, var, std, median, average, quantile, percentile, the nan*
variants, histogram, bincount, digitize, cov, corrcoef)."""
import builtins as _b
import operator
import warnings

import numpy as np
import torch

from .. import _host  # NumPy's functions on npu memory first (where measured faster)
from .._convert import f64, normalize_axes, normalize_axis, tensor_of
from .._dtypes import NP_TO_TORCH, TORCH_TO_NP, to_dtype
from . import _array
from ._array import OPS, wrap
from ._reductions import _mask, _out
from ._sorting import _argsort_t, _float_keys

_F64 = np.dtype(np.float64)


_t = tensor_of  # the package's one unwrapping helper


def _float_dtype(t, dtype):
    if dtype is not None:
        return to_dtype(dtype)
    d = TORCH_TO_NP[t.dtype]
    return d if d.kind in "fc" else _F64


def _count(t, axes, where):
    if where is True:
        n = 1
        for ax in axes:
            n *= t.shape[ax]
        return n
    m = _t(where).broadcast_to(t.shape)
    return m.sum(dim=axes, keepdim=True) if axes else m.to(torch.int64)


@_host.numpy_first(np.mean, _array.array_type, big=True)   # NumPy's pairwise summation at any size
def mean(a, axis=None, dtype=None, out=None, keepdims=False, *, where=True):
    """Arithmetic mean (matches numpy.mean: integers average in float64; empty gives NaN)."""
    t = _t(a)
    dt = _float_dtype(t, dtype)
    tdt = NP_TO_TORCH[dt]
    axes = normalize_axes(axis, t.ndim)
    if where is True and axes and (tdt.is_floating_point or tdt.is_complex):
        return _out(f64(torch.mean, t.to(tdt), dim=axes, keepdim=keepdims), out)
    x = _mask(t, where, 0).to(tdt)
    if not axes:
        return _out(x.clone(), out)
    s = f64(torch.sum, x, dim=axes, keepdim=True)
    n = _count(t, axes, where)
    r = s / n
    if not keepdims:
        r = r.squeeze(axes) if axes else r
    return _out(r.to(tdt), out)


@_host.numpy_first(np.var, _array.array_type, big=_host.ALWAYS)   # NumPy's accumulation (float16 in float16) at any thread count
def var(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=True, mean=None, correction=None):
    """Variance (matches numpy.var; ddof / Array API correction; complex gives a real result)."""
    if correction is not None:
        if ddof != 0:
            raise ValueError("ddof and correction can't be provided simultaneously.")
        ddof = correction
    t = _t(a)
    dt = _float_dtype(t, dtype)
    tdt = NP_TO_TORCH[dt]
    axes = normalize_axes(axis, t.ndim)
    x = t.to(tdt)
    if where is True and mean is None and axes and (x.is_floating_point() or x.is_complex()):
        r = f64(torch.var, x, dim=axes, correction=ddof, keepdim=keepdims)
        return _out(r, out)
    n = _count(t, axes, where)
    if mean is not None:
        m = _t(mean).to(tdt)
    else:
        m = f64(torch.sum, _mask(x, where, 0), dim=axes, keepdim=True) / n if axes else x
    d = x - m
    sq = (d * d.conj()).real if d.is_complex() else d * d
    sq = _mask(sq, where, 0)
    s = f64(torch.sum, sq, dim=axes, keepdim=True) if axes else sq
    denom = n - ddof
    if isinstance(denom, torch.Tensor):
        denom = denom.clamp(min=0)
    elif denom < 0:
        denom = 0
    r = s / denom
    if not keepdims and axes:
        r = r.squeeze(axes)
    real = r.real if r.is_complex() else r
    res_dt = torch.float32 if tdt == torch.complex64 else torch.float64 if tdt == torch.complex128 else tdt
    return _out(real.to(res_dt), out)


@_host.numpy_first(np.std, _array.array_type, big=_host.ALWAYS)   # NumPy's accumulation (float16 in float16) at any thread count
def std(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=True, mean=None, correction=None):
    """Standard deviation (matches numpy.std)."""
    v = var(a, axis, dtype, None, ddof, keepdims, where=where, mean=mean, correction=correction)
    return _out(torch.sqrt(v._t), out)


def _nan_masked_stats(a, axis, keepdims, ddof, dtype, kind, out, where):
    t = _t(a)
    fn = {"mean": mean, "var": var, "std": std}[kind]
    if t.is_floating_point() or t.is_complex():
        ok = ~torch.isnan(t)
        where = wrap(ok if where is True else ok & _t(where).to(torch.bool))
    if kind == "mean":
        r = fn(a, axis, dtype, keepdims=keepdims, where=where)
    else:
        r = fn(a, axis, dtype, ddof=ddof, keepdims=keepdims, where=where)
    return _out(r._t, out)


def nanmean(a, axis=None, dtype=None, out=None, keepdims=False, *, where=True):
    """Mean ignoring NaN (matches numpy.nanmean; all-NaN slices give NaN)."""
    return _nan_masked_stats(a, axis, keepdims, 0, dtype, "mean", out, where)


def nanvar(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=True, mean=None, correction=None):
    """Variance ignoring NaN (matches numpy.nanvar; ``mean=`` is not supported)."""
    if mean is not None:
        raise NotImplementedError("nanvar(mean=...) is not supported")
    return _nan_masked_stats(a, axis, keepdims, ddof if correction is None else correction, dtype, "var", out, where)


def nanstd(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=True, mean=None, correction=None):
    """Standard deviation ignoring NaN (matches numpy.nanstd; ``mean=`` is not supported)."""
    if mean is not None:
        raise NotImplementedError("nanstd(mean=...) is not supported")
    return _nan_masked_stats(a, axis, keepdims, ddof if correction is None else correction, dtype, "std", out, where)


_METHODS = ("linear", "lower", "higher", "midpoint", "nearest")


def _quantile_t(t, q, axes, keepdims, method, skip_nan, res_dt):
    """Quantiles along axes (merged into one last axis) from a sorted copy, NumPy's arithmetic:
    virtual index (n - 1) * q and its fraction in q's dtype, the neighbours' difference in the
    input's dtype, the interpolation in the result dtype. q is a float tensor (any shape, values in
    [0, 1]); returns (result of shape q.shape + reduced shape, the sorted merged tensor)."""
    nd = t.ndim
    s = torch.sort(_merge_axes(t, axes), dim=-1).values  # NaN last
    length = s.shape[-1]
    if skip_nan and s.is_floating_point():
        n = (~torch.isnan(s)).sum(-1, keepdim=True)
    else:
        n = torch.full(s.shape[:-1] + (1,), length, dtype=torch.int64, device=s.device)
    qf = q.reshape((-1,) + (1,) * (s.ndim))
    pos = qf * (n - 1).clamp(min=0).to(q.dtype)
    if method == "lower":
        pos = torch.floor(pos)
    elif method == "higher":
        pos = torch.ceil(pos)
    elif method == "nearest":
        pos = torch.round(pos)     # half to even, as numpy.around
    top = _b.max(length - 1, 0)
    lo = torch.floor(pos).long().clamp(0, top)
    hi = torch.ceil(pos).long().clamp(0, top)
    sb = s.unsqueeze(0).expand((qf.shape[0],) + tuple(s.shape))
    vlo = torch.gather(sb, -1, lo.expand(sb.shape[:-1] + (1,)))
    vhi = torch.gather(sb, -1, hi.expand(sb.shape[:-1] + (1,)))
    rdt = NP_TO_TORCH[res_dt]
    if method in ("lower", "higher", "nearest"):
        r = vlo.to(rdt)
    else:
        if s.dtype == torch.bool:
            raise TypeError("numpy boolean subtract, the `-` operator, is not supported, use the bitwise_xor, "
                            "the `^` operator, or the logical_xor function instead.")
        if method == "midpoint":
            g = torch.where(hi > lo, 0.5, 0.0).to(q.dtype)
        else:
            g = pos - torch.floor(pos)
        diff = (vhi - vlo).to(rdt)      # in the input's dtype first, as numpy's b - a
        r = torch.where(g >= 0.5, vhi.to(rdt) - diff * (1 - g).to(rdt), vlo.to(rdt) + diff * g.to(rdt))
    if s.is_floating_point():
        bad = (n == 0) if skip_nan else torch.isnan(s).any(-1, keepdim=True)
        r = torch.where(bad.unsqueeze(0).expand(r.shape), torch.tensor(float("nan"), dtype=rdt, device=s.device), r)
    r = r.squeeze(-1)
    if keepdims:
        r = r.reshape((r.shape[0],) + tuple(1 if i in axes else t.shape[i] for i in range(nd)))
    return r.reshape(tuple(q.shape) + tuple(r.shape[1:])), s


def _quantile(a, q, axis, out, method, keepdims, skip_nan, scale, interpolation=None, overwrite_input=False):
    if interpolation is not None:
        method = interpolation
    if method not in _METHODS:
        raise ValueError(f"{method!r} is not a valid method. xp supports: {', '.join(_METHODS)}")
    t = _t(a)
    if t.is_complex():
        raise TypeError("a must be an array of real numbers")
    weak = type(q) in (int, float)       # NumPy: Python scalars promote weakly
    qt = _t(q)
    q_dt = _F64 if weak else TORCH_TO_NP[qt.dtype]
    if scale != 1 or q_dt.kind not in "f":   # numpy.percentile's q / 100 (ints -> float64); quantile's float q
        g_dt = q_dt if q_dt.kind == "f" else _F64
    else:
        g_dt = q_dt
    qv = qt.to(NP_TO_TORCH[g_dt])
    qv = qv / scale if scale != 1 else qv
    if qv.numel() and (bool((qv < 0).any()) or bool((qv > 1).any()) or bool(torch.isnan(qv).any())):
        raise ValueError("Quantiles must be in the range [0, 1]" if scale == 1 else
                         "Percentiles must be in the range [0, 100]")
    if qv.ndim > 2:
        raise ValueError("q must be a scalar or 1d")
    axes = normalize_axes(axis, t.ndim)
    tt = t.reshape(1) if t.ndim == 0 else t
    axes = (0,) if t.ndim == 0 else axes
    d0 = TORCH_TO_NP[t.dtype]
    if method in ("lower", "higher", "nearest") or (method == "linear" and scale == 1 and q_dt.kind in "biu"):
        res_dt = d0      # an element of the input (integer q in quantile: integer virtual indexes)
    else:
        res_dt = to_dtype(np.result_type(d0, 0.0) if weak else np.result_type(d0, g_dt))
    r, s = _quantile_t(tt, qv, axes, keepdims, method, skip_nan, res_dt)
    if overwrite_input and isinstance(a, _array.ARRAY) and t.ndim:
        # NumPy may reorder its input in place; xp leaves it sorted along the reduced axes
        perm = [i for i in range(t.ndim) if i not in axes] + list(axes)
        a._t.copy_(s.reshape([t.shape[i] for i in perm]).permute(*[perm.index(i) for i in range(t.ndim)]))
    return _out(r, out)


def quantile(a, q, axis=None, out=None, overwrite_input=False, method="linear", keepdims=False, *, weights=None,
             interpolation=None):
    """q-th quantiles, q in [0, 1] (matches numpy.quantile for methods linear, lower, higher,
    midpoint, nearest; result shape q.shape + reduced shape)."""
    if weights is not None:
        raise NotImplementedError("quantile(weights=...) is not supported")
    return _quantile(a, q, axis, out, method, keepdims, False, 1, interpolation, overwrite_input)


def percentile(a, q, axis=None, out=None, overwrite_input=False, method="linear", keepdims=False, *, weights=None,
               interpolation=None):
    """q-th percentiles, q in [0, 100] (matches numpy.percentile)."""
    if weights is not None:
        raise NotImplementedError("percentile(weights=...) is not supported")
    return _quantile(a, q, axis, out, method, keepdims, False, 100, interpolation, overwrite_input)


def nanquantile(a, q, axis=None, out=None, overwrite_input=False, method="linear", keepdims=False, *, weights=None,
                interpolation=None):
    """Quantiles ignoring NaN (matches numpy.nanquantile)."""
    return _quantile(a, q, axis, out, method, keepdims, True, 1, interpolation, overwrite_input)


def nanpercentile(a, q, axis=None, out=None, overwrite_input=False, method="linear", keepdims=False, *, weights=None,
                  interpolation=None):
    """Percentiles ignoring NaN (matches numpy.nanpercentile)."""
    return _quantile(a, q, axis, out, method, keepdims, True, 100, interpolation, overwrite_input)


def _merge_axes(t, axes):
    """t with the axes moved last and merged into one (the shape of the rest, then -1)."""
    rest = [i for i in range(t.ndim) if i not in axes]
    p = t.permute(*rest, *axes)
    merged = 1
    for ax in axes:
        merged *= t.shape[ax]
    return p.reshape(tuple(p.shape[:len(rest)]) + (merged,))   # (-1 is ambiguous when the rest is empty)


def _median(a, axis, out, overwrite_input, keepdims, skip_nan):
    t = _t(a)
    if t.ndim == 0:
        t, axes = t.reshape(1), (0,)
        shape0 = ()
    else:
        axes = normalize_axes(axis, t.ndim)
        shape0 = tuple(t.shape)
    p = _merge_axes(t, axes)
    s = torch.gather(p, -1, _argsort_t(p, -1)) if p.is_complex() else torch.sort(p, dim=-1).values  # NaN last
    if overwrite_input and isinstance(a, _array.ARRAY) and t.ndim:
        # NumPy's median may reorder its input in place; xp leaves it sorted along the reduced axes
        rest = [i for i in range(t.ndim) if i not in axes]
        perm = rest + list(axes)
        inv = [perm.index(i) for i in range(t.ndim)]
        a._t.copy_(s.reshape([t.shape[i] for i in perm]).permute(*inv))
    d0 = TORCH_TO_NP[t.dtype]
    res_dt = d0 if d0.kind in "fc" else _F64           # numpy.mean's result dtype
    work = torch.float32 if res_dt == np.float16 else NP_TO_TORCH[res_dt]   # float16 means add in float32
    n = s.shape[-1]
    inexact = s.is_floating_point() or s.is_complex()
    if skip_nan and inexact:
        k = (~torch.isnan(s)).sum(-1, keepdim=True)
    else:
        k = torch.full(s.shape[:-1] + (1,), n, dtype=torch.int64, device=s.device)
    lo = ((k - 1) // 2).clamp(min=0, max=_b.max(n - 1, 0))
    hi = (k // 2).clamp(min=0, max=_b.max(n - 1, 0))
    if n == 0:
        r = torch.full(s.shape[:-1], float("nan"), dtype=work, device=s.device)
    else:
        vlo = torch.gather(s, -1, lo).to(work)
        vhi = torch.gather(s, -1, hi).to(work)
        r = torch.where(lo == hi, vlo, (vlo + vhi) / 2)
        if inexact:
            if skip_nan:
                if bool((k == 0).any()):
                    warnings.warn("All-NaN slice encountered", RuntimeWarning, stacklevel=3)
                r = torch.where(k == 0, torch.full_like(r, float("nan")), r)
            else:   # a slice holding NaN gives its last element after the sort, as numpy's _median_nancheck
                last = s[..., -1:].to(work)
                r = torch.where(torch.isnan(last), last, r)
        r = r.squeeze(-1)
    if keepdims:
        r = r.reshape(tuple(1 if i in axes else n_ for i, n_ in enumerate(shape0)))
    return _out(r.to(NP_TO_TORCH[res_dt]), out)


def median(a, axis=None, out=None, overwrite_input=False, keepdims=False):
    """Median, averaging the middle pair (matches numpy.median: every dtype including complex, in
    NumPy's complex order; integers give float64; a slice holding NaN gives NaN; with
    ``overwrite_input=True`` the input is left sorted along the reduced axes)."""
    return _median(a, axis, out, overwrite_input, keepdims, False)


def nanmedian(a, axis=None, out=None, overwrite_input=False, keepdims=False):
    """Median ignoring NaN (matches numpy.nanmedian; all-NaN slices give NaN)."""
    return _median(a, axis, out, overwrite_input, keepdims, True)


def average(a, axis=None, weights=None, returned=False, *, keepdims=False):
    """Weighted average (matches numpy.average)."""
    t = _t(a)
    if weights is None:
        r = mean(wrap(t), axis, keepdims=keepdims)
        axes = normalize_axes(axis, t.ndim)
        n = 1
        for ax in axes:
            n *= t.shape[ax]
        scl = wrap(torch.full(r._t.shape, n, dtype=r._t.dtype, device=t.device))
        return (r, scl) if returned else r
    w = _t(weights)
    if w.shape != t.shape:
        if axis is None or w.ndim != 1:
            raise TypeError("Axis must be specified when shapes of a and weights differ.")
        ax = normalize_axis(axis, t.ndim)
        if w.shape[0] != t.shape[ax]:
            raise ValueError("Length of weights not compatible with specified axis.")
        w = w.reshape(tuple(-1 if i == ax else 1 for i in range(t.ndim))).broadcast_to(t.shape)
    dt = NP_TO_TORCH[to_dtype(np.result_type(_float_dtype(t, None), TORCH_TO_NP[w.dtype]))]
    axes = normalize_axes(axis, t.ndim)
    x, wt = t.to(dt), w.to(dt)
    kshape = tuple(1 if i in axes else n for i, n in enumerate(t.shape))

    def _keep(v):   # reduced without keepdim, then reshaped: PyTorch sums keepdim=True in another order
        return v.reshape(kshape) if keepdims else v

    scl = _keep(wt.sum(dim=axes)) if axes else wt
    if bool((scl == 0).any()):
        raise ZeroDivisionError("Weights sum to zero, can't be normalized")
    r = (_keep((x * wt).sum(dim=axes)) if axes else x * wt) / scl
    return (wrap(r), wrap(scl.broadcast_to(r.shape).clone())) if returned else wrap(r)


@_host.numpy_first(np.bincount, _array.array_type, big=True, fp=_host.FP_IF_FLOAT)
def bincount(x, weights=None, minlength=0):
    """Counts of each non-negative int (matches numpy.bincount; int64, float64 with weights)."""
    t = _t(x)
    if t.ndim != 1:
        raise ValueError("object too deep for desired array" if t.ndim > 1 else "object of too small depth")
    if t.is_floating_point() or t.is_complex():
        raise TypeError("Cannot cast array data from float to int64 according to the rule 'safe'")
    t = t.long()     # as NumPy's cast to intp: uint64 values >= 2**63 become negative and are refused
    if t.numel() and bool((t < 0).any()):
        raise ValueError("'list' argument must have no negative elements")
    if minlength < 0:
        raise ValueError("minlength must not be negative")
    w = None if weights is None else _t(weights).to(torch.float64)
    if w is not None and w.shape != t.shape:
        raise ValueError("The weights and list don't have the same length.")
    return wrap(torch.bincount(t, weights=w, minlength=minlength))


def digitize(x, bins, right=False):
    """Bin index of each value (matches numpy.digitize; bins monotonic, increasing or decreasing;
    NaN orders after every number, as in NumPy's sort and searchsorted; complex raises TypeError)."""
    xt, bt = _t(x), _t(bins)
    if xt.is_complex() or bt.is_complex():
        raise TypeError("x may not be complex")
    if bt.ndim != 1:
        raise ValueError("object too deep for desired array")
    dt = NP_TO_TORCH[to_dtype(np.result_type(TORCH_TO_NP[xt.dtype], TORCH_TO_NP[bt.dtype]))]
    xt, bt = xt.to(dt), bt.to(dt)
    # NumPy's monotonicity test: the direction is set by the first edge differing from bins[0]
    # (strictly greater: increasing, else decreasing), and comparisons with NaN never fail it
    inc = True
    if bt.numel() > 1:
        differs = torch.nonzero(bt[1:] != bt[0]).reshape(-1)
        if differs.numel():
            i = int(differs[0]) + 1
            inc = bool(bt[0] < bt[i])
            tail = bt[i:]
            bad = (tail[:-1] > tail[1:]) if inc else (tail[:-1] < tail[1:])
            if bool(bad.any()):
                raise ValueError("bins must be monotonically increasing or decreasing")
    if xt.is_floating_point():    # order-preserving integer keys: NaN last, as NumPy's searchsorted
        xt, bt = _float_keys(xt), _float_keys(bt)
    if inc:
        r = torch.searchsorted(bt.contiguous(), xt.contiguous(), right=not right)
    else:
        r = bt.numel() - torch.searchsorted(bt.flip(0).contiguous(), xt.contiguous(), right=not right)
    return wrap(r)


def histogram_bin_edges(a, bins=10, range=None, weights=None):
    t = _t(a)
    if isinstance(bins, str):
        raise NotImplementedError(f"histogram bins={bins!r} (estimators) is not supported; pass a count or edges")
    if isinstance(bins, (int, np.integer)):
        nb = operator.index(bins)
        if nb < 1:
            raise ValueError("`bins` must be positive, when an integer")
        if range is not None:
            lo, hi = range        # NumPy: anything but two values raises ValueError/TypeError here
            lo, hi = float(lo), float(hi)
            if lo > hi:
                raise ValueError("max must be larger than min in range parameter.")
        elif t.numel():
            lo, hi = float(t.min()), float(t.max())
        else:
            lo, hi = 0.0, 1.0
        if not (np.isfinite(lo) and np.isfinite(hi)):
            raise ValueError(f"autodetected range of [{lo}, {hi}] is not finite")
        if lo == hi:
            lo, hi = lo - 0.5, hi + 0.5
        dt = np.result_type(TORCH_TO_NP[t.dtype], lo, hi) if TORCH_TO_NP[t.dtype].kind == "f" else _F64
        step = (hi - lo) / nb  # NumPy's linspace: start + i * step, the last edge exactly hi
        edges = torch.arange(nb + 1, dtype=torch.float64, device=t.device) * step + lo
        edges[-1] = hi
        return wrap(edges.to(NP_TO_TORCH[to_dtype(dt)]))
    e = _t(bins)
    if e.ndim != 1 or (e.numel() > 1 and bool((e[1:] < e[:-1]).any())):
        raise ValueError("`bins` must increase monotonically, when an array")
    return wrap(e)


@_host.numpy_first(np.histogram, _array.array_type, big=True)
def histogram(a, bins=10, range=None, density=None, weights=None):
    """Histogram over equal-width or given bins, last bin closed (matches numpy.histogram)."""
    t = _t(a).reshape(-1)
    edges = histogram_bin_edges(wrap(t), bins, range)._t
    nb = edges.numel() - 1
    et = edges.to(torch.float64)
    x = t.to(torch.float64)
    idx = torch.searchsorted(et.contiguous(), x.contiguous(), right=True) - 1
    idx = torch.where(x == et[-1], torch.full_like(idx, nb - 1), idx)
    keep = (idx >= 0) & (idx < nb)
    w = None
    if weights is not None:
        w = _t(weights).reshape(-1)
        if w.numel() != t.numel():
            raise ValueError("weights should have the same shape as a.")
        w = w[keep].to(torch.float64 if not w.is_complex() else torch.complex128)
    counts = torch.bincount(idx[keep], weights=w, minlength=nb)[:nb] if w is None or not w.is_complex() else \
        torch.zeros(nb, dtype=w.dtype, device=t.device).index_add_(0, idx[keep], w)
    if density:
        widths = torch.diff(edges).to(torch.float64)
        counts = counts.to(torch.float64) / widths / counts.sum()
    elif weights is not None:
        counts = counts.to(NP_TO_TORCH[to_dtype(np.result_type(TORCH_TO_NP[_t(weights).dtype]))]
                           if not _t(weights).is_complex() else counts.dtype)
    return wrap(counts), wrap(edges)


def _cov_weights(w, name, nobs):
    w = _t(w).to(torch.float64)
    if name == "fweights" and not bool((w == torch.round(w)).all()):
        raise TypeError("fweights must be integer")
    if w.ndim > 1:
        raise RuntimeError(f"cannot handle multidimensional {name}")
    if w.shape[0] != nobs:
        raise RuntimeError(f"incompatible numbers of samples and {name}")
    if bool((w < 0).any()):
        raise ValueError(f"{name} cannot be negative")
    return w


def cov(m, y=None, rowvar=True, bias=False, ddof=None, fweights=None, aweights=None, *, dtype=None):
    """Covariance matrix (matches numpy.cov: frequency and analytic weights, ``dtype`` (the data
    is cast to it and centred in place, so an integer dtype raises NumPy's casting TypeError),
    a RuntimeWarning when the degrees of freedom are <= 0)."""
    if ddof is not None and ddof != int(ddof):
        raise ValueError("ddof must be integer")
    x = _t(m)
    if x.ndim > 2:
        raise ValueError("m has more than 2 dimensions")
    yt = None if y is None else _t(y)
    if yt is not None and yt.ndim > 2:
        raise ValueError("y has more than 2 dimensions")
    if dtype is None:
        dts = [TORCH_TO_NP[x.dtype], _F64] + ([] if yt is None else [TORCH_TO_NP[yt.dtype]])
        dt = to_dtype(np.result_type(*dts))
    else:
        dt = to_dtype(dtype)
    tdt = NP_TO_TORCH[dt]
    m_ndim = x.ndim
    x = x.to(tdt).reshape(1, -1) if x.ndim < 2 else x.to(tdt)
    if not rowvar and m_ndim != 1:      # NumPy: m by its own ndim, y by its (2-d) row count
        x = x.T
    if x.shape[0] == 0:
        return wrap(torch.empty((0, 0), dtype=torch.float64, device=x.device))
    if yt is not None:
        yt = yt.to(tdt).reshape(1, -1) if yt.ndim < 2 else yt.to(tdt)
        if not rowvar and yt.shape[0] != 1:
            yt = yt.T
        if yt.shape[1] != x.shape[1]:
            raise ValueError(f"all the input array dimensions except for the concatenation axis must match exactly, "
                             f"but along dimension 1, the array at index 0 has size {x.shape[1]} and the array "
                             f"at index 1 has size {yt.shape[1]}")
        x = torch.cat([x, yt], 0)
    ddof = (0 if bias else 1) if ddof is None else int(ddof)
    nobs = x.shape[1]
    w = None if fweights is None else _cov_weights(fweights, "fweights", nobs)
    aw = None if aweights is None else _cov_weights(aweights, "aweights", nobs)
    if aw is not None:
        w = aw if w is None else w * aw
    avg, w_sum = average(wrap(x), axis=1, weights=None if w is None else wrap(w), returned=True)
    w_sum = float(w_sum._t.reshape(-1)[0])
    if w is None:
        fact = nobs - ddof
    elif ddof == 0:
        fact = w_sum
    elif aw is None:
        fact = w_sum - ddof
    else:
        fact = w_sum - ddof * float((w * aw).sum()) / w_sum
    if fact <= 0:
        warnings.warn("Degrees of freedom <= 0 for slice", RuntimeWarning, stacklevel=2)
        fact = 0.0
    xa = wrap(x.clone())
    OPS["subtract"](xa, avg[:, None], out=xa)   # in place, as NumPy: an integer dtype cannot hold the centred data
    xc = xa._t
    xt = (xc if w is None else xc * w.to(xc.dtype)).T
    c = f64(torch.matmul, xc, xt.conj())
    work = torch.complex128 if c.is_complex() else torch.float64
    with np.errstate(divide="ignore"):
        scale = np.true_divide(1, fact)
    if np.isinf(scale):
        warnings.warn("divide by zero encountered in divide", RuntimeWarning, stacklevel=2)
    c = f64(torch.mul, c.to(work), float(scale)).to(c.dtype)
    return wrap(c.squeeze())


def corrcoef(x, y=None, rowvar=True, *, dtype=None):
    """Pearson correlation coefficients (matches numpy.corrcoef)."""
    c = cov(x, y, rowvar, dtype=dtype)._t
    if c.ndim == 0:
        return wrap(c / c)
    d = torch.sqrt(torch.diagonal(c).real)
    c = c / d[:, None] / d[None, :]
    if c.is_complex():
        return wrap(torch.complex(c.real.clamp(-1, 1), c.imag.clamp(-1, 1)))
    return wrap(c.clamp(-1, 1))
