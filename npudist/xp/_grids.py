"""Grids and structured matrices: mgrid, ogrid, vander, broadcast (each matches NumPy's)."""
import math
import operator

import numpy as np
import torch

from ._core import as_tensor, ndarray, wrap
from ._creation import arange, asarray, indices
from ._dtypes import NP_TO_TORCH, TORCH_TO_NP, to_dtype
from ._manipulation import broadcast_arrays, concatenate
from ._misc import result_type


class _Grid:
    """numpy.mgrid / numpy.ogrid: NumPy's algorithm (dtype from result_type(0, starts, stops,
    steps); a complex step is a point count; start/stop may be arrays), computed with xp ops."""

    def __init__(self, sparse):
        self.sparse = sparse

    @staticmethod
    def _check(s, name):
        if not isinstance(s, slice):
            raise TypeError(f"{name} takes slices, got {type(s).__name__}")

    def _one(self, key):
        start = 0 if key.start is None else key.start
        step, stop = key.step, key.stop
        if isinstance(step, (complex, np.complexfloating)):
            length = int(abs(step))
            typ = result_type(start, stop, abs(step))
            step = (stop - start) / float(length - 1) if length != 1 else length
            return arange(0, length, 1, dtype=typ) * step + start
        return arange(start, stop, step)

    def __getitem__(self, key):
        name = "ogrid" if self.sparse else "mgrid"
        if not isinstance(key, tuple):
            self._check(key, name)
            return self._one(key)
        size, num_list = [], [0]
        for kk in key:
            self._check(kk, name)
            start = 0 if kk.start is None else kk.start
            step = 1 if kk.step is None else kk.step
            if isinstance(step, (complex, np.complexfloating)):
                step = abs(step)
                size.append(int(step))
            else:
                size.append(math.ceil((kk.stop - start) / step))
            num_list += [start, kk.stop, step]
        typ = result_type(*num_list)
        nn = [arange(n, dtype=typ) for n in size] if self.sparse else indices(size, typ)
        for k, kk in enumerate(key):
            start = 0 if kk.start is None else kk.start
            step = 1 if kk.step is None else kk.step
            if isinstance(step, (complex, np.complexfloating)):
                step = int(abs(step))
                if step != 1:
                    step = (kk.stop - start) / float(step - 1)
            nn[k] = nn[k] * step + start
        if self.sparse:
            slobj = [None] * len(size)
            for k in range(len(size)):
                slobj[k] = slice(None)
                nn[k] = nn[k][tuple(slobj)]
                slobj[k] = None
            return tuple(nn)
        return nn


mgrid = _Grid(False)
mgrid.__doc__ = "Dense multi-dimensional grid: mgrid[0:3, 0:5:2j] (matches numpy.mgrid)."
ogrid = _Grid(True)
ogrid.__doc__ = "Open (broadcastable) grid: ogrid[0:3, 0:5] (matches numpy.ogrid)."


def vander(x, N=None, increasing=False):
    """Vandermonde matrix: columns x**(N-1), ..., x**0 (or increasing powers), in the dtype
    promote_types(x.dtype, int) (matches numpy.vander, integer wraparound included)."""
    t = as_tensor(x)
    if t.ndim != 1:
        raise ValueError("x must be a one-dimensional array or sequence.")
    n = t.shape[0] if N is None else operator.index(N)
    if n < 0:
        raise ValueError("negative dimensions are not allowed")
    dt = to_dtype(np.promote_types(TORCH_TO_NP[t.dtype], np.int64))
    tdt = NP_TO_TORCH[dt]
    xt = t.to(tdt)
    cols = torch.ones((t.shape[0], n), dtype=tdt, device=t.device)
    if n > 1:
        cols[:, 1:] = xt.reshape(-1, 1)
        cols = torch.cumprod(cols, dim=1) if tdt not in (torch.uint16, torch.uint32, torch.uint64) else \
            torch.cumprod(cols.to(torch.int64), dim=1).to(tdt)
    return wrap(cols if increasing else cols.flip(1))


class broadcast:
    """The broadcast of several arrays (matches numpy.broadcast's shape, nd, ndim, size, numiter;
    ``values`` holds the broadcast arrays, as cupy.broadcast)."""

    def __init__(self, *arrays):
        self.values = tuple(broadcast_arrays(*arrays))
        self.shape = self.values[0].shape if self.values else ()
        self.nd = self.ndim = len(self.shape)
        self.size = math.prod(self.shape)
        self.numiter = len(arrays)


class _Concatenator:
    """r_ / c_: concatenation by index expressions (matches numpy.r_ and numpy.c_ for arrays,
    scalars, slices (start:stop:step, a complex step giving a point count) and a leading
    'axis[,ndmin[,trans1d]]' string; the matrix directives 'r'/'c' are not supported)."""

    def __init__(self, axis, ndmin, trans1d):
        self.axis, self.ndmin, self.trans1d = axis, ndmin, trans1d

    def __getitem__(self, key):
        if not isinstance(key, tuple):
            key = (key,)
        axis, ndmin, trans1d = self.axis, self.ndmin, self.trans1d
        objs, types = [], []
        for i, item in enumerate(key):
            if isinstance(item, str):
                if i != 0:
                    raise ValueError("string directives must come first")
                if item in ("r", "c"):
                    raise NotImplementedError("r_/c_ matrix directives ('r', 'c') make numpy.matrix; not supported")
                try:
                    parts = [int(p) for p in item.split(",")]
                except ValueError:
                    raise ValueError(f"unknown special directive {item!r}") from None
                axis = parts[0]
                ndmin = parts[1] if len(parts) > 1 else ndmin
                trans1d = parts[2] if len(parts) > 2 else trans1d
                continue
            if isinstance(item, slice):
                t = _Grid(False)[item]._t
                if ndmin > 1:
                    t = t.reshape((1,) * (ndmin - 1) + tuple(t.shape))
                    if trans1d != -1:
                        t = t.swapaxes(-1, trans1d)
                types.append(wrap(t))
            elif np.ndim(item) == 0 and not isinstance(item, ndarray):
                t = asarray(item)._t.reshape((1,) * max(ndmin, 1))
                types.append(item)
            else:
                t = asarray(item)._t
                nd0 = t.ndim
                if nd0 < ndmin:
                    t = t.reshape((1,) * (ndmin - nd0) + tuple(t.shape))
                    if trans1d != -1:
                        k2, k1 = ndmin - nd0, trans1d
                        if k1 < 0:
                            k1 += k2 + 1
                        ax = list(range(ndmin))
                        t = t.permute(*(ax[:k1] + ax[k2:] + ax[k1:k2]))
                types.append(wrap(t))
            objs.append(t)
        if not objs:
            return asarray([])
        dt = result_type(*types)
        tdt = NP_TO_TORCH[dt]
        return concatenate([wrap(o.to(tdt)) for o in objs], axis=axis)

    def __len__(self):
        return 0


r_ = _Concatenator(0, 1, -1)
c_ = _Concatenator(-1, 2, 0)
