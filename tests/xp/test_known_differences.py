"""Known differences from NumPy 2.4 / CuPy, found by trying xp as a NumPy/CuPy user would.

Each test runs the same call with NumPy and with xp and is marked ``xfail(strict=True)``
while xp differs: the fix turns it into an XPASS failure, and then the test moves to the test
file of its family module without the marker. Silently wrong values first, then error classes,
then CuPy behaviours.
"""
import numpy as np
import pytest

import npudist.xp as nxp

from .compare import assert_same


def _xfail(what):
    return pytest.mark.xfail(strict=True, reason=f"known difference: {what}")


# --- silently wrong values / shapes -------------------------------------------------------------


@_xfail("ufunc signature=(None, None, float64) is ignored: add(int32, int32, signature=...) stays int32; NumPy "
        "runs the float64 loop")
def test_ufunc_signature_selects_the_loop():
    a = np.arange(4, dtype=np.int32)
    assert_same(np.add(a, a, signature=(None, None, np.float64)),
                nxp.add(nxp.asarray(a), nxp.asarray(a), signature=(None, None, nxp.float64)))


@_xfail("ufunc order='F' is ignored (the result is C-contiguous); NumPy returns a Fortran-ordered result")
def test_ufunc_order_f():
    r = nxp.add(nxp.arange(12).reshape(3, 4), 1, order="F")
    assert r.flags.f_contiguous and not r.flags.c_contiguous


@_xfail("float16 var/std of many values: NumPy accumulates in float16 (inf here), xp in float32")
def test_var_float16_accumulates_as_numpy():
    a = np.random.default_rng(3).standard_normal(100_000).astype(np.float16)
    with np.errstate(over="ignore"):
        expected = a.var()
    assert_same(expected, nxp.asarray(a).var())


@_xfail("float32 cumsum with torch's default 2 threads runs PyTorch's kernel (another summation order): "
        "1% off NumPy at 1e6 elements; with one thread NumPy's own loop gives NumPy's value")
def test_cumsum_float32_independent_of_thread_count():
    import torch
    prev = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        expected = np.cumsum(np.full(10**6, 0.1, np.float32))[-1]
        got = nxp.cumsum(nxp.full(10**6, 0.1, dtype=nxp.float32))[-1]
    finally:
        torch.set_num_threads(prev)
    assert_same(expected, got, rtol=1e-6, atol=0)


# --- crashes on valid input ----------------------------------------------------------------------


# --- error classes: NumPy raises ValueError, xp PyTorch's RuntimeError ---------------------------

def _same_error(fn):
    with pytest.raises(Exception) as np_err:
        fn(np)
    with pytest.raises(Exception) as xp_err:
        fn(nxp)
    assert isinstance(xp_err.value, np_err.type), (np_err.value, xp_err.value)


@_xfail("ufunc casting='bogus' is accepted; NumPy raises ValueError naming the valid rules")
def test_ufunc_rejects_unknown_casting():
    _same_error(lambda m: m.add(m.arange(3), 1, casting="bogus"))


@_xfail("bitwise_and.reduce of a float array: torch's NotImplementedError, NumPy TypeError (no loop)")
def test_bitwise_reduce_float_error_class():
    _same_error(lambda m: m.bitwise_and.reduce(m.ones(3)))


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
        "np.where; np.exp raises TypeError): xp has no __array_function__/__array_ufunc__; CuPy dispatches them "
        "to cupy and returns device arrays")
def test_numpy_functions_dispatch_to_xp_as_cupy():
    a = nxp.arange(4.0)
    for r in (np.concatenate([a, a]), np.sort(a), np.exp(a)):
        assert isinstance(r, nxp.ndarray), type(r)


# --- missing names (CuPy has them) ---------------------------------------------------------------


