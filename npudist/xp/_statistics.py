"""Statistics (matches numpy.mean, var, std, median, average, quantile, percentile, the nan*
variants, histogram, bincount, digitize, cov, corrcoef)."""
import builtins as _b
import operator

import numpy as np
import torch

from ._core import tensor_of, f64, normalize_axes, normalize_axis, wrap
from ._dtypes import NP_TO_TORCH, TORCH_TO_NP, to_dtype
from ._core import ndarray
from ._reductions import _mask, _out
from . import _host   # NumPy's functions on npu memory first (issue 21 step 6)

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


@_host.numpy_first(np.mean, ndarray, big=True)   # NumPy's pairwise summation at any size
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


@_host.numpy_first(np.var, ndarray, big=True)
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


@_host.numpy_first(np.std, ndarray, big=True)
def std(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=True, mean=None, correction=None):
    """Standard deviation (matches numpy.std)."""
    v = var(a, axis, dtype, None, ddof, keepdims, where=where, mean=mean, correction=correction)
    return _out(torch.sqrt(v._t), out)


def _nan_masked_stats(a, axis, keepdims, ddof, dtype, kind):
    t = _t(a)
    if not (t.is_floating_point() or t.is_complex()):
        fn = {"mean": mean, "var": var, "std": std}[kind]
        return fn(a, axis, dtype, keepdims=keepdims) if kind == "mean" else fn(a, axis, dtype, ddof=ddof,
                                                                              keepdims=keepdims)
    ok = ~torch.isnan(t)
    w = wrap(ok)
    if kind == "mean":
        return mean(a, axis, dtype, keepdims=keepdims, where=w)
    return (var if kind == "var" else std)(a, axis, dtype, ddof=ddof, keepdims=keepdims, where=w)


def nanmean(a, axis=None, dtype=None, out=None, keepdims=False, *, where=True):
    """Mean ignoring NaN (matches numpy.nanmean; all-NaN slices give NaN)."""
    return _nan_masked_stats(a, axis, keepdims, 0, dtype, "mean")


def nanvar(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=True, mean=None, correction=None):
    """Variance ignoring NaN (matches numpy.nanvar)."""
    return _nan_masked_stats(a, axis, keepdims, ddof if correction is None else correction, dtype, "var")


def nanstd(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=True, mean=None, correction=None):
    """Standard deviation ignoring NaN (matches numpy.nanstd)."""
    return _nan_masked_stats(a, axis, keepdims, ddof if correction is None else correction, dtype, "std")


_METHODS = ("linear", "lower", "higher", "midpoint", "nearest")


def _quantile_t(t, q, axes, keepdims, method, skip_nan):
    """Quantiles along axes (merged into one last axis) from a sorted copy. q is a float64 tensor
    (any shape, values in [0, 1]); the result has shape q.shape + reduced shape."""
    if method not in _METHODS:
        raise ValueError(f"quantile method {method!r} is not supported; use one of {', '.join(_METHODS)}")
    nd = t.ndim
    rest = [i for i in range(nd) if i not in axes]
    p = t.permute(*rest, *axes)
    p = p.reshape(tuple(p.shape[:len(rest)]) + (-1,))
    s = torch.sort(p, dim=-1).values  # NaN last
    length = s.shape[-1]
    if skip_nan and s.is_floating_point():
        n = (~torch.isnan(s)).sum(-1, keepdim=True)
    else:
        n = torch.full(s.shape[:-1] + (1,), length, dtype=torch.int64, device=s.device)
    qf = q.reshape((-1,) + (1,) * (s.ndim))
    wdt = s.dtype if s.is_floating_point() else torch.float64
    pos = qf.to(torch.float64) * (n - 1).clamp(min=0).to(torch.float64)
    if method == "lower":
        pos = torch.floor(pos)
    elif method == "higher":
        pos = torch.ceil(pos)
    elif method == "nearest":
        pos = torch.round(pos)
    lo = torch.floor(pos).long().clamp(0, _b.max(length - 1, 0))
    hi = torch.ceil(pos).long().clamp(0, _b.max(length - 1, 0))
    sb = s.unsqueeze(0).expand((qf.shape[0],) + tuple(s.shape))
    vlo = torch.gather(sb, -1, lo.expand(sb.shape[:-1] + (1,))).to(wdt)
    vhi = torch.gather(sb, -1, hi.expand(sb.shape[:-1] + (1,))).to(wdt)
    if method == "midpoint":
        g = torch.where(hi > lo, torch.tensor(0.5, dtype=torch.float64, device=s.device),
                        torch.tensor(0.0, dtype=torch.float64, device=s.device))
    else:
        g = pos - torch.floor(pos)
    g = g.to(wdt)
    diff = vhi - vlo
    r = torch.where(g >= 0.5, vhi - diff * (1 - g), vlo + diff * g)
    if s.is_floating_point():
        bad = (n == 0) if skip_nan else torch.isnan(s).any(-1, keepdim=True)
        r = torch.where(bad.unsqueeze(0).expand(r.shape), torch.tensor(float("nan"), dtype=wdt, device=s.device), r)
    r = r.squeeze(-1)
    if keepdims:
        r = r.reshape((r.shape[0],) + tuple(1 if i in axes else t.shape[i] for i in range(nd)))
    return r.reshape(tuple(q.shape) + tuple(r.shape[1:]))


def _quantile(a, q, axis, out, method, keepdims, skip_nan, scale, interpolation=None):
    if interpolation is not None:
        method = interpolation
    t = _t(a)
    if t.is_complex():
        raise TypeError("quantile/percentile of complex arrays is not supported (as in NumPy)")
    qt = _t(q).to(torch.float64) / scale
    if qt.numel() and (bool((qt < 0).any()) or bool((qt > 1).any())):
        raise ValueError("Quantiles must be in the range [0, 1]" if scale == 1 else
                         "Percentiles must be in the range [0, 100]")
    axes = normalize_axes(axis, t.ndim)
    if t.ndim == 0:
        t = t.reshape(1)
        axes = (0,)
    dt0 = TORCH_TO_NP[t.dtype]
    q_dt = q.dtype if isinstance(q, ndarray) else (q if isinstance(q, (int, float)) else np.asarray(q).dtype)
    if method in ("lower", "higher", "nearest"):
        res_dt = dt0  # the result is an element of the input
    else:
        res_dt = to_dtype(np.result_type(dt0 if dt0.kind == "f" else _F64, q_dt))
        if dt0.kind == "f" and res_dt != dt0:
            t = t.to(NP_TO_TORCH[res_dt])
    r = _quantile_t(t, qt, axes, keepdims, method, skip_nan)
    return _out(r.to(NP_TO_TORCH[res_dt]), out)


def quantile(a, q, axis=None, out=None, overwrite_input=False, method="linear", keepdims=False, *, weights=None,
             interpolation=None):
    """q-th quantiles, q in [0, 1] (matches numpy.quantile for methods linear, lower, higher,
    midpoint, nearest; result shape q.shape + reduced shape)."""
    if weights is not None:
        raise NotImplementedError("quantile(weights=...) is not supported")
    return _quantile(a, q, axis, out, method, keepdims, False, 1, interpolation)


def percentile(a, q, axis=None, out=None, overwrite_input=False, method="linear", keepdims=False, *, weights=None,
               interpolation=None):
    """q-th percentiles, q in [0, 100] (matches numpy.percentile)."""
    if weights is not None:
        raise NotImplementedError("percentile(weights=...) is not supported")
    return _quantile(a, q, axis, out, method, keepdims, False, 100, interpolation)


def nanquantile(a, q, axis=None, out=None, overwrite_input=False, method="linear", keepdims=False, *, weights=None,
                interpolation=None):
    """Quantiles ignoring NaN (matches numpy.nanquantile)."""
    return _quantile(a, q, axis, out, method, keepdims, True, 1, interpolation)


def nanpercentile(a, q, axis=None, out=None, overwrite_input=False, method="linear", keepdims=False, *, weights=None,
                  interpolation=None):
    """Percentiles ignoring NaN (matches numpy.nanpercentile)."""
    return _quantile(a, q, axis, out, method, keepdims, True, 100, interpolation)


def median(a, axis=None, out=None, overwrite_input=False, keepdims=False):
    """Median, averaging the middle pair (matches numpy.median; NaN propagates)."""
    return quantile(a, 0.5, axis=axis, out=out, keepdims=keepdims)


def nanmedian(a, axis=None, out=None, overwrite_input=False, keepdims=False):
    """Median ignoring NaN (matches numpy.nanmedian)."""
    return nanquantile(a, 0.5, axis=axis, out=out, keepdims=keepdims)


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
    scl = wt.sum(dim=axes, keepdim=keepdims) if axes else wt
    if bool((scl == 0).any()):
        raise ZeroDivisionError("Weights sum to zero, can't be normalized")
    r = (x * wt).sum(dim=axes, keepdim=keepdims) / scl
    return (wrap(r), wrap(scl.broadcast_to(r.shape).clone())) if returned else wrap(r)


@_host.numpy_first(np.bincount, ndarray, big=True)
def bincount(x, weights=None, minlength=0):
    """Counts of each non-negative int (matches numpy.bincount; int64, float64 with weights)."""
    t = _t(x)
    if t.ndim != 1:
        raise ValueError("object too deep for desired array" if t.ndim > 1 else "object of too small depth")
    if t.is_floating_point() or t.is_complex():
        raise TypeError("Cannot cast array data from float to int64 according to the rule 'safe'")
    if t.numel() and bool((t < 0).any()):
        raise ValueError("'list' argument must have no negative elements")
    if minlength < 0:
        raise ValueError("minlength must not be negative")
    w = None if weights is None else _t(weights).to(torch.float64)
    return wrap(torch.bincount(t.long(), weights=w, minlength=minlength))


def digitize(x, bins, right=False):
    """Bin index of each value (matches numpy.digitize; bins monotonic, increasing or decreasing)."""
    xt, bt = _t(x), _t(bins)
    if bt.ndim != 1:
        raise ValueError("object too deep for desired array")
    dt = NP_TO_TORCH[to_dtype(np.result_type(TORCH_TO_NP[xt.dtype], TORCH_TO_NP[bt.dtype]))]
    xt, bt = xt.to(dt), bt.to(dt)
    d = torch.diff(bt)
    inc = bool((d >= 0).all())
    if not inc and not bool((d <= 0).all()):
        raise ValueError("bins must be monotonically increasing or decreasing")
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
            lo, hi = float(range[0]), float(range[1])
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
    if e.ndim != 1 or (e.numel() > 1 and bool((torch.diff(e) < 0).any())):
        raise ValueError("`bins` must increase monotonically, when an array")
    return wrap(e)


@_host.numpy_first(np.histogram, ndarray, big=True)
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


def cov(m, y=None, rowvar=True, bias=False, ddof=None, fweights=None, aweights=None, *, dtype=None):
    """Covariance matrix (matches numpy.cov without fweights/aweights)."""
    if fweights is not None or aweights is not None:
        raise NotImplementedError("cov(fweights=, aweights=) is not supported")
    x = _t(m)
    if x.ndim > 2:
        raise ValueError("m has more than 2 dimensions")
    dt = NP_TO_TORCH[_float_dtype(x, dtype)] if dtype is not None else \
        NP_TO_TORCH[to_dtype(np.result_type(TORCH_TO_NP[x.dtype], np.float64))]
    x = x.to(dt)
    x = x.reshape(1, -1) if x.ndim < 2 else x
    if not rowvar and x.shape[0] != 1:
        x = x.T
    if y is not None:
        yt = _t(y).to(dt)
        yt = yt.reshape(1, -1) if yt.ndim < 2 else yt
        if not rowvar and yt.shape[0] != 1:
            yt = yt.T
        x = torch.cat([x, yt], 0)
    ddof = (0 if bias else 1) if ddof is None else ddof
    n = x.shape[1]
    xc = x - x.mean(1, keepdim=True)
    c = f64(torch.matmul, xc, xc.T.conj()) / _b.max(n - ddof, 0)
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
