"""Tiling: tile, repeat (matches NumPy's)."""
import operator

import numpy as np
import torch

from .._core import tensor_of, wrap
from .._core._manipulation import repeat  # noqa: F401  (re-exported: the core's own, behind ndarray.repeat)

_t = tensor_of  # the package's one unwrapping helper


def tile(A, reps):
    """Repeats the whole array (matches numpy.tile; negative reps raise ValueError)."""
    t = _t(A)
    reps = (reps,) if isinstance(reps, (int, np.integer)) else tuple(reps)
    reps = tuple(operator.index(r) for r in reps)
    if any(r < 0 for r in reps):
        raise ValueError("negative dimensions are not allowed")
    return wrap(torch.tile(t, reps).clone())

