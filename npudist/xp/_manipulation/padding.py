"""Padding: pad with modes constant, edge, reflect, symmetric, wrap (matches numpy.pad)."""
import numpy as np
import torch

from .._core import tensor_of, wrap

from .shape import ndim, shape

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
