"""Known differences from NumPy 2.4 / CuPy, found by trying xp as a NumPy/CuPy user would.

Each test runs the same call with NumPy and with xp and is marked ``xfail(strict=True)``
while xp differs: the fix turns it into an XPASS failure, and then the test moves to the test
file of its family module without the marker. Silently wrong values first, then error classes,
then CuPy behaviours.
"""
import numpy as np
import pytest

import npudist.xp as nxp


def _xfail(what):
    return pytest.mark.xfail(strict=True, reason=f"known difference: {what}")


# --- silently wrong values / shapes -------------------------------------------------------------


# --- crashes on valid input ----------------------------------------------------------------------


# --- error classes: NumPy raises ValueError, xp PyTorch's RuntimeError ---------------------------

def _same_error(fn):
    with pytest.raises(Exception) as np_err:
        fn(np)
    with pytest.raises(Exception) as xp_err:
        fn(nxp)
    assert isinstance(xp_err.value, np_err.type), (np_err.value, xp_err.value)


@_xfail("allocating more than the npu holds: torch.OutOfMemoryError (a RuntimeError); NumPy raises MemoryError and "
        "CuPy's OutOfMemoryError is a MemoryError, so `except MemoryError` misses xp's")
def test_out_of_memory_is_a_memory_error():
    with pytest.raises(MemoryError):
        nxp.zeros((1 << 40,), dtype=nxp.float32)


# --- NumPy functions applied to xp arrays (CuPy's protocols) ---------------------------------------

@_xfail("np.asarray(xp_array) silently copies to the host (docs/xp.md says so); CuPy refuses implicit conversion "
        "with TypeError ('use .get()'), which keeps hidden device->host copies out of per-rank pipelines")
def test_implicit_numpy_conversion_is_refused_as_cupy():
    with pytest.raises(TypeError):
        np.asarray(nxp.arange(3))


@_xfail("NumPy functions on xp arrays silently return NumPy arrays on the host (np.concatenate, np.sort, "
        "np.where): xp has no __array_function__ (its __array_ufunc__ dispatches np.exp etc. to xp, as CuPy's); "
        "CuPy dispatches them to cupy and returns device arrays")
def test_numpy_functions_dispatch_to_xp_as_cupy():
    a = nxp.arange(4.0)
    for r in (np.concatenate([a, a]), np.sort(a), np.exp(a)):
        assert isinstance(r, nxp.ndarray), type(r)


# --- missing names (CuPy has them) ---------------------------------------------------------------


