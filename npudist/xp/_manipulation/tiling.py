"""Tiling: tile, repeat (matches NumPy's)."""
import numpy as np
import torch

from .._core import ndarray, normalize_axis, tensor_of, wrap


_t = tensor_of  # the package's one unwrapping helper


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
