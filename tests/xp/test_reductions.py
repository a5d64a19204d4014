"""Reductions of complex arrays in NumPy's order (real part, then imaginary part; NaNs
propagating or skipped as NumPy's); mirrors npudist/xp/_reductions.py."""
import numpy as np
import pytest

from .compare import numpy_xp_compare

N = np.nan
C = np.array([[1 + 2j, 1 + 3j, 0, 2 - 1j], [2 - 1j, 2 - 2j, -1, 5j], [N + 1j, 3, 1j * N, 4]])


@pytest.mark.parametrize("fn", ["max", "min", "argmax", "argmin", "ptp", "nanmax", "nanmin"])
@pytest.mark.parametrize("axis", [None, 0, 1])
@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
@numpy_xp_compare()
def test_complex_extremes(fn, axis, dtype, xp):
    a = C[:2] if fn in ("nanmax", "nanmin") and axis is None else C
    return getattr(xp, fn)(xp.asarray(a.astype(dtype)), axis=axis)


@pytest.mark.parametrize("fn", ["nanargmax", "nanargmin"])
@numpy_xp_compare()
def test_complex_nanarg(fn, xp):
    return getattr(xp, fn)(xp.asarray(C), axis=1)


@numpy_xp_compare()
def test_complex_max_keepdims_initial(xp):
    return xp.max(xp.asarray(C[:2]), axis=1, keepdims=True, initial=2 + 10j)
