"""Splitting: split, array_split, hsplit, vsplit, dsplit, unstack (matches NumPy's)."""
import numpy as np

from .._core import normalize_axis, tensor_of, wrap

_t = tensor_of  # the package's one unwrapping helper


def array_split(ary, indices_or_sections, axis=0):
    """Splits into sub-arrays (views), allowing unequal division (matches numpy.array_split)."""
    t = _t(ary)
    axis = normalize_axis(axis, t.ndim)
    n = t.shape[axis]
    if isinstance(indices_or_sections, (int, np.integer)):
        sections = int(indices_or_sections)
        if sections <= 0:
            raise ValueError("number sections must be larger than 0.")
        each, extra = divmod(n, sections)
        bounds = [0]
        for i in range(sections):
            bounds.append(bounds[-1] + each + (1 if i < extra else 0))
    else:
        bounds = [0] + [int(i) for i in indices_or_sections] + [n]
    out = []
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        lo = min(max(lo + n if lo < 0 else lo, 0), n)
        hi = min(max(hi + n if hi < 0 else hi, 0), n)
        out.append(wrap(t.narrow(axis, lo, max(hi - lo, 0))))
    return out


def split(ary, indices_or_sections, axis=0):
    """Splits into equal sub-arrays (views) (matches numpy.split: unequal division raises)."""
    if isinstance(indices_or_sections, (int, np.integer)):
        t = _t(ary)
        if t.shape[normalize_axis(axis, t.ndim)] % int(indices_or_sections):
            raise ValueError("array split does not result in an equal division")
    return array_split(ary, indices_or_sections, axis)


def hsplit(ary, indices_or_sections):
    return split(ary, indices_or_sections, 1 if _t(ary).ndim > 1 else 0)


def vsplit(ary, indices_or_sections):
    return split(ary, indices_or_sections, 0)


def dsplit(ary, indices_or_sections):
    return split(ary, indices_or_sections, 2)


def unstack(x, /, *, axis=0):
    """Array API unstack: tuple of views along axis."""
    t = _t(x)
    return tuple(wrap(s) for s in t.unbind(normalize_axis(axis, t.ndim)))
