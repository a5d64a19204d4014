"""Differences from NumPy 2.4 found by trying xp as a NumPy/CuPy user would (helper "breaker").

Each test runs the same call with NumPy and with xp and is marked ``xfail(strict=True)``
while xp differs, so the lead can route it (npudist/xp and csrc/core/xp are owned by other
helpers); the fix removes the marker. Ordered as in the report: silently wrong values first,
then wrong error classes, then missing functions.
"""
import numpy as np
import pytest

import npudist.xp as nxp

from .compare import assert_same


def _xfail(what):
    return pytest.mark.xfail(strict=True, reason=f"breaker: {what}")


# --- silently wrong values / shapes -------------------------------------------------------------

@_xfail("float64 -> float16 astype of > 4096 elements double-rounds (through float32); NumPy rounds once")
def test_astype_float64_to_float16_rounds_once():
    # 190.9374954588728 lies just below the float16 midpoint 190.9375 between 190.875 and 191.0:
    # NumPy rounds it down; rounding to float32 first gives exactly 190.9375, which ties to 191.0.
    a = np.full(5000, 190.9374954588728)
    assert_same(a.astype(np.float16), nxp.asarray(a).astype(nxp.float16), rtol=0, atol=0)


@_xfail("x[...] = x.T (overlapping source and destination) writes a mix of old and new values; "
        "NumPy copies through a temporary")
def test_setitem_from_overlapping_transpose():
    a = np.arange(9.0).reshape(3, 3)
    x = nxp.asarray(a)
    a[:] = a.T
    x[:] = x.T
    assert_same(a, x, rtol=0, atol=0)


@_xfail("copyto(x, x.T) with overlap gives wrong values (NumPy: as if copied through a temporary)")
def test_copyto_overlapping_transpose():
    a = np.arange(9.0).reshape(3, 3)
    x = nxp.asarray(a)
    np.copyto(a, a.T)
    nxp.copyto(x, x.T)
    assert_same(a, x, rtol=0, atol=0)


@_xfail("x.T[...] = x with overlap gives wrong values")
def test_transposed_view_assigned_from_base():
    a = np.arange(9.0).reshape(3, 3)
    x = nxp.asarray(a)
    a.T[...] = a
    x.T[...] = x
    assert_same(a, x, rtol=0, atol=0)


@_xfail("linalg.solve(a (k,m,m), b (m,m)) follows PyTorch (b as a batch of vectors, result (k,m)); "
        "NumPy 2 treats b as a matrix unless b.ndim == 1 (result (k,m,m))")
def test_solve_numpy2_batched_rhs_is_a_matrix():
    rng = np.random.default_rng(0)
    a = rng.random((3, 3, 3)) + 3 * np.eye(3)
    b = rng.random((3, 3))
    assert_same(np.linalg.solve(a, b), nxp.linalg.solve(nxp.asarray(a), nxp.asarray(b)))


@_xfail("linalg.solve(a (2,3,3), b (2,3)) returns a (2,3) result; NumPy 2 raises ValueError "
        "(b is a (3x3) matrix batch mismatch)")
def test_solve_numpy2_rejects_vector_batch():
    with pytest.raises(ValueError):
        np.linalg.solve(np.stack([np.eye(3)] * 2), np.ones((2, 3)))
    with pytest.raises(ValueError):
        nxp.linalg.solve(nxp.stack([nxp.eye(3)] * 2), nxp.ones((2, 3)))


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


@_xfail("arange(-3, 3, dtype=uint8) wraps to [253 254 255 0 1 2]; NumPy 2 raises OverflowError")
def test_arange_out_of_range_for_dtype():
    with pytest.raises(OverflowError):
        np.arange(-3, 3, dtype=np.uint8)
    with pytest.raises(OverflowError):
        nxp.arange(-3, 3, dtype=nxp.uint8)


@_xfail("round(float16, 2) scales in float32; NumPy scales in float16 (0.295 -> 0.3, xp 0.29)")
def test_round_float16_decimals():
    a = np.array([0.295, 0.8853, -0.865], dtype=np.float16)
    assert_same(np.round(a, 2), nxp.round(nxp.asarray(a), 2), rtol=0, atol=0)


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

@_xfail("max/min over an axis of an empty array whose result is not empty crashes with a torch TypeError "
        "(fill_value None); NumPy returns an empty result for (0,3).max(axis=1)")
def test_max_axis_of_empty_array_with_empty_result():
    assert_same(np.zeros((0, 3)).max(axis=1), nxp.zeros((0, 3)).max(axis=1))


@_xfail("percentile over axis 1 of a (0,3) array raises RuntimeError (reshape of 0 elements); NumPy: empty")
def test_percentile_of_empty_rows():
    assert_same(np.percentile(np.zeros((0, 3)), 50, axis=1), nxp.percentile(nxp.zeros((0, 3)), 50, axis=1))


@_xfail("clip(uint8, -5, 300) raises OverflowError; NumPy 2 clips with out-of-range Python ints")
def test_clip_with_out_of_range_python_ints():
    a = np.arange(0, 256, 51, dtype=np.uint8)
    assert_same(np.clip(a, -5, 300), nxp.clip(nxp.asarray(a), -5, 300))


@_xfail("x[mask] = x[:k] (source overlapping the destination) raises RuntimeError from torch's overlap "
        "check; NumPy assigns")
def test_mask_assignment_from_overlapping_source():
    a = np.arange(9.0)
    x = nxp.asarray(a)
    a[a > 3] = a[:5]
    x[x > 3] = x[:5]
    assert_same(a, x, rtol=0, atol=0)


@_xfail("Generator.integers(0, 2**64, dtype=uint64) raises ValueError 'Overflow when unpacking long long'")
def test_random_integers_full_uint64_range():
    r = nxp.random.default_rng(0).integers(0, 2**64, 3, dtype=nxp.uint64)
    assert r.dtype == np.uint64 and r.shape == (3,)


@_xfail("pad(uint8, constant_values=300) raises torch's RuntimeError (overflow); NumPy casts it unsafely "
        "(300 -> 44)")
def test_pad_constant_value_cast_as_numpy():
    a = np.ones(2, dtype=np.uint8)
    assert_same(np.pad(a, 2, constant_values=300), nxp.pad(nxp.asarray(a), 2, constant_values=300))


@_xfail("sort(kind='bogus') is accepted; NumPy raises ValueError naming the valid kinds")
def test_sort_rejects_unknown_kind():
    _same_error(lambda m: m.sort(m.array([3, 1, 2]), kind="bogus"))


@_xfail("a == None compares the whole array (Python False); NumPy compares elementwise ([False False False])")
def test_eq_none_is_elementwise():
    assert_same(np.arange(3) == None, nxp.arange(3) == None)  # noqa: E711  (the comparison under test)


# --- error classes: NumPy raises ValueError, xp PyTorch's RuntimeError ---------------------------

def _same_error(fn):
    with pytest.raises(Exception) as np_err:
        fn(np)
    with pytest.raises(Exception) as xp_err:
        fn(nxp)
    assert isinstance(xp_err.value, np_err.type), (np_err.value, xp_err.value)


@_xfail("shapes that do not broadcast in a binary operator: RuntimeError, NumPy ValueError")
def test_broadcast_error_class():
    _same_error(lambda m: m.ones((5, 6)) + m.ones((4, 6)))


@_xfail("assigning a value that does not broadcast: RuntimeError, NumPy ValueError")
def test_setitem_broadcast_error_class():
    _same_error(lambda m: m.ones((5, 6)).__setitem__(slice(None), m.ones(4)))


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


@_xfail("== of arrays whose shapes do not broadcast: RuntimeError, NumPy ValueError")
def test_eq_broadcast_error_class():
    _same_error(lambda m: m.arange(3) == m.arange(4))


@_xfail("dot of non-aligned matrices: RuntimeError, NumPy ValueError")
def test_dot_shape_error_class():
    _same_error(lambda m: m.dot(m.ones((5, 6)), m.ones((5, 6))))


@_xfail("linalg.solve with a mismatched right-hand side: RuntimeError, NumPy ValueError")
def test_solve_shape_error_class():
    _same_error(lambda m: m.linalg.solve(m.eye(3), m.ones(4)))


@_xfail("linalg.norm(matrix, ord=3): RuntimeError, NumPy ValueError")
def test_norm_bad_order_error_class():
    _same_error(lambda m: m.linalg.norm(m.ones((3, 3)), ord=3))


@_xfail("view as a larger dtype when the last axis does not divide: RuntimeError, NumPy ValueError")
def test_view_larger_dtype_error_class():
    _same_error(lambda m: m.ones((5, 6), dtype=m.float32)[:, :5].view(m.float64))


@_xfail("setting .shape of a non-contiguous array: RuntimeError, NumPy AttributeError")
def test_shape_assignment_error_class():
    def f(m):
        m.ones((5, 6)).T.shape = (30,)
    _same_error(f)


@_xfail("bincount of uint64 values >= 2**63: RuntimeError, NumPy ValueError")
def test_bincount_uint64_error_class():
    _same_error(lambda m: m.bincount(m.array([2**63 + 1], dtype=m.uint64)))


@_xfail("float() of a 1-element 2-d array returns a float; NumPy 2.4 raises TypeError")
def test_float_of_nd_array_error_class():
    _same_error(lambda m: float(m.array([[2.5]])))


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

@_xfail("ufunc.at is missing (np.add.at / cupy.add.at: unbuffered scatter-add with repeated indices)")
def test_ufunc_at():
    a = np.zeros(5)
    x = nxp.zeros(5)
    np.add.at(a, np.array([0, 0, 1]), 1)
    nxp.add.at(x, nxp.array([0, 0, 1]), 1)
    assert_same(a, x, rtol=0, atol=0)


@_xfail("ufunc.reduceat is missing")
def test_ufunc_reduceat():
    assert_same(np.add.reduceat(np.arange(8), [0, 4, 6]), nxp.add.reduceat(nxp.arange(8), [0, 4, 6]))


@_xfail("xp.lib.stride_tricks (sliding_window_view, as_strided) is missing; CuPy has both")
def test_sliding_window_view():
    a = np.arange(10.0)
    assert_same(np.lib.stride_tricks.sliding_window_view(a, 3),
                nxp.lib.stride_tricks.sliding_window_view(nxp.asarray(a), 3))
