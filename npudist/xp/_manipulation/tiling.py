"""Tiling: tile, repeat (matches NumPy's)."""
import operator

import numpy as np
import torch

from .._core import ndarray, normalize_axis, tensor_of, wrap
from .._dtypes import TORCH_TO_NP

_t = tensor_of  # the package's one unwrapping helper


def tile(A, reps):
    """Repeats the whole array (matches numpy.tile; negative reps raise ValueError)."""
    t = _t(A)
    reps = (reps,) if isinstance(reps, (int, np.integer)) else tuple(reps)
    reps = tuple(operator.index(r) for r in reps)
    if any(r < 0 for r in reps):
        raise ValueError("negative dimensions are not allowed")
    return wrap(torch.tile(t, reps).clone())


def repeat(a, repeats, axis=None):
    """Repeats elements (matches numpy.repeat: ``repeats`` an int or a 0-/1-d sequence or array
    broadcast along ``axis``; arrays must cast to int64 under 'safe' (TypeError for floats and
    uint64, as NumPy); ValueError for negative counts, a length mismatch or more than 1 dim)."""
    t = _t(a)
    if axis is None:
        t, axis = t.reshape(-1), 0
    axis = normalize_axis(axis, t.ndim)
    n = t.shape[axis]
    if isinstance(repeats, (int, np.integer)):
        if repeats < 0:
            raise ValueError("negative dimensions are not allowed")
        return wrap(torch.repeat_interleave(t, int(repeats), dim=axis))
    if isinstance(repeats, (ndarray, torch.Tensor)):
        r = _t(repeats)
        if not np.can_cast(TORCH_TO_NP[r.dtype], np.intp, "safe"):
            raise TypeError(f"Cannot cast array data from {TORCH_TO_NP[r.dtype]!r} to dtype('int64') according to "
                            f"the rule 'safe'")
    else:
        r = torch.as_tensor(np.asarray(repeats).astype(np.intp), device=t.device)   # sequences (host data)
    if r.ndim > 1:
        raise ValueError("object too deep for desired array")
    if r.ndim == 1 and r.shape[0] not in (1, n):
        raise ValueError(f"operands could not be broadcast together with shape ({n},) ({r.shape[0]},)")
    r = r.long()
    if r.numel() and bool((r < 0).any()):
        raise ValueError("negative dimensions are not allowed")
    if r.numel() == 1 and (r.ndim == 0 or n != 1):
        r = int(r.reshape(-1)[0])
    return wrap(torch.repeat_interleave(t, r, dim=axis))
