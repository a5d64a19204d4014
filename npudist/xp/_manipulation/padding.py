"""Padding: pad with modes constant, edge, reflect, symmetric, wrap (matches numpy.pad)."""
import numpy as np
import torch

from .._core import tensor_of, wrap
from .._creation import asarray, linspace
from .._dtypes import TORCH_TO_NP

_t = tensor_of  # the package's one unwrapping helper


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


def _reflect_odd(t, ax, before, after, include_edge):
    """reflect/symmetric padding with reflect_type='odd' along ``ax``: NumPy's algorithm, which
    fills at most one period per step, each step reflecting the already padded array about its
    current edge value (2 * edge - mirrored values), so pads wider than the axis keep growing."""
    n = t.shape[ax]
    shape = list(t.shape)
    shape[ax] = n + before + after
    padded = t.new_empty(shape)
    padded.narrow(ax, before, n).copy_(t)
    left, right = before, after
    while left > 0 or right > 0:
        size = padded.shape[ax]
        old = size - right - left
        if include_edge:
            old, off = old // n * n, 1
        else:
            old, off = (old - 1) // (n - 1) * (n - 1), 0
        if left > 0:
            c = min(old, left)
            chunk = padded.narrow(ax, left - off + 1, c).flip(ax)
            chunk = 2 * padded.narrow(ax, left, 1) - chunk
            padded.narrow(ax, left - c, c).copy_(chunk)
            left -= c
        if right > 0:
            c = min(old, right)
            top = size - right + off - 2               # the mirrored values run down from here
            chunk = padded.narrow(ax, top - c + 1, c).flip(ax)
            chunk = 2 * padded.narrow(ax, size - right - 1, 1) - chunk
            padded.narrow(ax, size - right, c).copy_(chunk)
            right -= c
    return padded


def _pairs(value, ndim, name):
    a = np.broadcast_to(np.asarray(value), (ndim, 2)) if np.ndim(value) <= 2 else None
    if a is None:
        raise ValueError(f"{name} has an invalid shape")
    return [(a[i, 0].item(), a[i, 1].item()) for i in range(ndim)]


_ALLOWED = {"constant": {"constant_values"}, "edge": set(), "wrap": set(), "reflect": {"reflect_type"},
            "symmetric": {"reflect_type"}, "maximum": {"stat_length"}, "minimum": {"stat_length"},
            "mean": {"stat_length"}, "median": {"stat_length"}, "linear_ramp": {"end_values"}, "empty": set()}


def _stat(mode, chunk, ax):
    if mode in ("maximum", "minimum") and chunk.is_complex():   # NumPy's order: real part, then imaginary
        red = torch.amax if mode == "maximum" else torch.amin
        fill = float("-inf") if mode == "maximum" else float("inf")
        re = red(chunk.real, dim=ax, keepdim=True)
        im = red(torch.where(chunk.real == re, chunk.imag, torch.full_like(chunk.imag, fill)), dim=ax, keepdim=True)
        return torch.complex(re, im)
    if mode == "maximum":
        return chunk.amax(dim=ax, keepdim=True)
    if mode == "minimum":
        return chunk.amin(dim=ax, keepdim=True)
    work = chunk.to(torch.float64) if not (chunk.is_floating_point() or chunk.is_complex()) else chunk
    r = work.mean(dim=ax, keepdim=True) if mode == "mean" else work.quantile(0.5, dim=ax, keepdim=True)
    if not (chunk.is_floating_point() or chunk.is_complex()):
        r = torch.round(r)    # NumPy rounds statistics padded into integer arrays (half to even)
    return r.to(chunk.dtype)


def pad(array, pad_width, mode="constant", **kwargs):
    """Pads an array (matches numpy.pad: modes constant, edge, wrap, reflect and symmetric (with
    reflect_type 'even' or 'odd'), maximum, minimum, mean, median (with
    stat_length), linear_ramp (end_values), empty, and a callable mode; an axis is padded after
    the axes before it, as NumPy does)."""
    t = _t(array)
    if callable(mode):
        out = pad(array, pad_width, "constant", constant_values=0)
        arr = out.get()
        for ax in range(arr.ndim):
            np.apply_along_axis(mode, ax, arr, _pairs(pad_width, t.ndim, "pad_width")[ax], ax, kwargs)
        return asarray(arr)
    if mode not in _ALLOWED:
        raise ValueError(f"mode {mode!r} is not supported")
    unsupported = set(kwargs) - _ALLOWED[mode]
    if unsupported:
        raise ValueError(f"unsupported keyword arguments for mode {mode!r}: {unsupported}")
    if np.size(pad_width) == 0 or np.asarray(pad_width).dtype.kind not in "iu":
        raise TypeError("`pad_width` must be of integral type.")
    widths = _pairs(pad_width, t.ndim, "pad_width")
    if any(int(b) < 0 or int(e) < 0 for b, e in widths):
        raise ValueError("index can't contain negative values")
    if mode in ("constant", "empty"):
        cv = _pairs(kwargs.get("constant_values", 0), t.ndim, "constant_values")
        with np.errstate(all="ignore"):   # NumPy casts the values unsafely (300 -> 44 in uint8)
            cv = [tuple(np.asarray(v).astype(TORCH_TO_NP[t.dtype], casting="unsafe").item() for v in pair)
                  for pair in cv]
        shape = [s + int(b) + int(e) for s, (b, e) in zip(t.shape, widths)]
        out = torch.zeros(shape, dtype=t.dtype, device=t.device)
        # fill the pad regions axis by axis (later axes overwrite corners, as NumPy does)
        inner = tuple(slice(int(b), int(b) + s) for (b, _), s in zip(widths, t.shape))
        out[inner] = t
        if mode == "constant":
            for ax, ((b, _e), (vb, ve)) in enumerate(zip(widths, cv)):
                sel = list(inner)
                for prev in range(ax):
                    sel[prev] = slice(None)
                sel[ax] = slice(0, int(b))
                out[tuple(sel)] = vb
                sel[ax] = slice(int(b) + t.shape[ax], shape[ax])
                out[tuple(sel)] = ve
        return wrap(out)
    stat = _pairs(kwargs.get("stat_length"), t.ndim, "stat_length") if kwargs.get("stat_length") is not None \
        else None
    ends = _pairs(kwargs.get("end_values", 0), t.ndim, "end_values")
    odd = kwargs.get("reflect_type", "even") == "odd"
    for ax, (b, e) in enumerate(widths):
        b, e = int(b), int(e)
        if b == 0 and e == 0:
            continue
        n = t.shape[ax]
        if n == 0:
            raise ValueError(f"can't extend empty axis {ax} using modes other than 'constant' or 'empty'")
        if mode in ("maximum", "minimum", "mean", "median"):
            sb, se = (n, n) if stat is None else (min(int(stat[ax][0]), n), min(int(stat[ax][1]), n))
            if (sb == 0 and b) or (se == 0 and e):
                raise ValueError("stat_length of 0 yields no value for padding")
            shp = list(t.shape)
            parts = []
            if b:
                shp[ax] = b
                parts.append(_stat(mode, t.narrow(ax, 0, sb), ax).expand(shp))
            parts.append(t)
            if e:
                shp[ax] = e
                parts.append(_stat(mode, t.narrow(ax, n - se, se), ax).expand(shp))
            t = torch.cat(parts, dim=ax)
            continue
        if mode == "linear_ramp":
            vb, ve = ends[ax]
            parts = []
            if b:
                parts.append(linspace(vb, wrap(t.narrow(ax, 0, 1)), b, endpoint=False, dtype=TORCH_TO_NP[t.dtype],
                                      axis=ax)._t.squeeze(ax + 1 if t.ndim else 0).reshape(
                    [b if i == ax else s for i, s in enumerate(t.shape)]))
            parts.append(t)
            if e:
                r = linspace(ve, wrap(t.narrow(ax, n - 1, 1)), e, endpoint=False, dtype=TORCH_TO_NP[t.dtype],
                             axis=ax)._t.reshape([e if i == ax else s for i, s in enumerate(t.shape)])
                parts.append(r.flip(ax))
            t = torch.cat(parts, dim=ax)
            continue
        if odd and mode in ("reflect", "symmetric") and not (mode == "reflect" and n == 1):
            padded = _reflect_odd(t, ax, b, e, mode == "symmetric")
        else:
            padded = t.index_select(ax, _pad_index(mode, n, b, e, t.device))
        t = padded
    return wrap(t)
