"""Coefficient-series helpers (matches numpy.polynomial.polyutils: as_series, trimseq,
trimcoef; same errors, result dtypes from numpy.common_type)."""
import operator

import numpy as np

from .._core import ndarray
from .._creation import array


def _as_int(x, desc):
    """operator.index with NumPy's message (floats, even integral ones, are a TypeError)."""
    try:
        return operator.index(x)
    except TypeError as e:
        raise TypeError(f"{desc} must be an integer, received {x}") from e


def trimseq(seq):
    """Drops trailing zeros of a 1-d series, keeping at least the first element (a view when
    something is dropped). 0-d input raises TypeError (no len), n-d ValueError (ambiguous truth
    value), as in NumPy."""
    if len(seq) == 0 or seq[-1] != 0:
        return seq
    for i in range(len(seq) - 1, -1, -1):
        if seq[i] != 0:
            break
    return seq[:i + 1]


def _common_type(arrays):
    # NumPy's own rule (ints -> float64, float16 kept, complex wins); bool raises TypeError
    return np.common_type(*[np.empty(0, dtype=a.dtype) for a in arrays])


def as_series(alist, trim=True):
    """A 1-d or 2-d array_like (or a sequence of them) -> list of 1-d float/complex xp arrays
    (copies), rows of a 2-d input each one series; ``trim`` drops trailing zeros.

    Raises ValueError for an empty or non-1-d series, or when no common float type exists
    (bool input), as numpy.polynomial.polyutils.as_series does (its object-dtype fallback is not
    supported: xp has no object arrays)."""
    if isinstance(alist, ndarray) and alist.ndim == 1:
        # each element is a series of one coefficient; trimming cannot change those
        if alist.size == 0:
            return []
        rows = alist.reshape(-1, 1)
        try:
            dtype = _common_type([alist])
        except Exception as e:
            raise ValueError("Coefficient arrays have no common type") from e
        return list(rows.astype(dtype))
    arrays = [array(a, ndmin=1, copy=None) for a in alist]
    for a in arrays:
        if a.size == 0:
            raise ValueError("Coefficient array is empty")
        if a.ndim != 1:
            raise ValueError("Coefficient array is not 1-d")
    if trim:
        arrays = [trimseq(a) for a in arrays]
    try:
        dtype = _common_type(arrays)
    except Exception as e:
        raise ValueError("Coefficient arrays have no common type") from e
    return [array(a, copy=True, dtype=dtype) for a in arrays]


def trimcoef(c, tol=0):
    """Drops trailing coefficients with absolute value <= tol (returns ``[0]`` when all go).

    Raises ValueError for tol < 0 and for what as_series refuses (empty, n-d, bool)."""
    if tol < 0:
        raise ValueError("tol must be non-negative")
    [c] = as_series([c])
    [ind] = (abs(c) > tol).nonzero()
    if len(ind) == 0:
        return c[:1] * 0
    return c[:int(ind[-1]) + 1].copy()
