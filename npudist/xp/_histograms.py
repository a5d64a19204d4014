"""Multi-dimensional histograms (matches numpy.histogramdd and numpy.histogram2d)."""
import operator

import numpy as np
import torch

from ._core import as_tensor, wrap
from ._dtypes import TORCH_TO_NP


def histogramdd(sample, bins=10, range=None, density=None, weights=None):
    """Histogram of D-dimensional samples (matches numpy.histogramdd).

    sample: (N, D) array or a sequence of D 1-d arrays. bins: an int, D ints, or D monotonic edge
    arrays. range: D (min, max) pairs. Right-most bins are closed, values outside the range are
    left out. Returns (hist of float64, list of D edge arrays: the sample's float dtype when the
    edges come from its extremes, float64 from a range or for integer samples, as NumPy's)."""
    if isinstance(sample, (list, tuple)):
        cols = [as_tensor(s).reshape(-1) for s in sample]
        sdt = np.result_type(*[TORCH_TO_NP[c.dtype] for c in cols])
        st = torch.stack([c.to(torch.float64) for c in cols], dim=1)
    else:
        st = as_tensor(sample)
        sdt = TORCH_TO_NP[st.dtype]
        st = st.reshape(-1, 1) if st.ndim == 1 else st
        if st.ndim != 2:
            raise ValueError("sample must be an (N, D) array or a sequence of D arrays")
        st = st.to(torch.float64)
    N, D = st.shape
    if isinstance(bins, (int, np.integer)) or (hasattr(bins, "__index__") and not hasattr(bins, "__len__")):
        bins = [operator.index(bins)] * D
    elif len(bins) != D:
        raise ValueError("The dimension of bins must be equal to the dimension of the sample x.")
    if range is None:
        range = [None] * D
    elif len(range) != D:
        raise ValueError("range argument must have one entry per dimension")
    edges = []
    for i in builtins_range(D):
        b = bins[i]
        if np.ndim(_host(b)) == 0:
            nb = operator.index(b)
            if nb < 1:
                raise ValueError(f"`bins[{i}]` must be positive, when an integer")
            if range[i] is not None:
                lo, hi = (float(v) for v in range[i])
                if lo > hi:
                    raise ValueError(f"In range, start must be <= stop in dimension {i}")
            elif N:   # the sample's extremes as NumPy scalars of its dtype, as NumPy's
                lo, hi = sdt.type(st[:, i].min().item()), sdt.type(st[:, i].max().item())
            else:
                lo, hi = 0.0, 1.0
            if not (np.isfinite(lo) and np.isfinite(hi)):
                raise ValueError(f"autodetected range of [{lo}, {hi}] is not finite")
            if lo == hi:
                lo, hi = lo - 0.5, hi + 0.5
            # the edges are NumPy's own linspace of those (D short vectors, computed on the host)
            edges_np = np.linspace(lo, hi, nb + 1)
            e = as_tensor(edges_np, device=st.device)
        else:
            e = as_tensor(b).reshape(-1)      # given edges keep their dtype, as NumPy's
            if bool((e[1:] < e[:-1]).any()):
                raise ValueError(f"`bins[{i}]` must be monotonically increasing, when an array")
        edges.append(e)
    nbin = [e.numel() + 1 for e in edges]          # with an outlier bin on each side
    flat = torch.zeros(N, dtype=torch.int64, device=st.device)
    for i, e in enumerate(edges):
        # compared in float64, which holds the sample's and the edges' values exactly
        e64, x = e.to(torch.float64).contiguous(), st[:, i].contiguous()
        idx = torch.searchsorted(e64, x, right=True)
        idx = torch.where(x == e64[-1], idx - 1, idx)
        flat = flat * nbin[i] + idx
    total = int(np.prod(nbin))
    w = None
    if weights is not None:
        w = as_tensor(weights).reshape(-1)
        if w.numel() != N:
            raise ValueError("weights should have the same length as the sample")
        w = w.to(torch.float64)
    hist = torch.bincount(flat, weights=w, minlength=total)[:total].to(torch.float64).reshape(nbin)
    hist = hist[tuple(slice(1, -1) for _ in builtins_range(D))].contiguous()
    if density:
        s = hist.sum()
        for i, e in enumerate(edges):
            shape = [1] * D
            shape[i] = -1
            hist = hist / torch.diff(e.to(torch.float64)).reshape(shape)
        hist = hist / s
    return wrap(hist), [wrap(e) for e in edges]


def histogram2d(x, y, bins=10, range=None, density=None, weights=None):
    """Histogram of 2-d samples (x[i], y[i]) (matches numpy.histogram2d). bins: int, [int, int],
    an edge array for both, or [edges_x, edges_y]. Returns (hist, xedges, yedges)."""
    tx, ty = as_tensor(x), as_tensor(y)
    if tx.shape != ty.shape:
        raise ValueError("x and y must have the same length")
    try:
        n = len(bins)
    except TypeError:
        n = 1
    if n != 1 and n != 2:
        bins = [bins, bins]     # one edge array for both axes
    hist, edges = histogramdd([tx, ty], bins, range, density, weights)
    return hist, edges[0], edges[1]


def _host(v):
    return v.get() if hasattr(v, "_t") else v


builtins_range = range
