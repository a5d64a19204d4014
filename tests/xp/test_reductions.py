"""Reductions of complex arrays in NumPy's order (real part, then imaginary part; NaNs
propagating or skipped as NumPy's); mirrors npudist/xp/_reductions.py."""
import numpy as np
import pytest

import npudist.xp as xp

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


@pytest.mark.parametrize("name", ["cumulative_sum", "cumulative_prod"])
@pytest.mark.parametrize("include_initial", [False, True])
def test_cumulative_0d_and_out_like_numpy(name, include_initial):
    npf, xpf = getattr(np, name), getattr(xp, name)
    np.testing.assert_array_equal(xp.asnumpy(xpf(xp.asarray(3.0), include_initial=include_initial)),
                                  npf(np.asarray(3.0), include_initial=include_initial))
    a = np.arange(1, 13, dtype=np.int16).reshape(3, 4)
    for out_dt in ("float32", "int8", "complex64"):
        n = 5 if include_initial else 4
        o_np, o_xp = np.zeros((3, n), out_dt), xp.zeros((3, n), out_dt)
        npf(a, axis=1, out=o_np, include_initial=include_initial)
        assert xpf(xp.asarray(a), axis=1, out=o_xp, include_initial=include_initial) is o_xp
        np.testing.assert_array_equal(xp.asnumpy(o_xp), o_np)
    with pytest.raises(ValueError, match="shape"):
        xpf(xp.asarray(a), axis=1, out=xp.zeros((3, 7)))
    with pytest.raises(ValueError, match="axis"):
        xpf(xp.asarray(a))


@pytest.mark.parametrize("fn", ["max", "min", "amax"])
@pytest.mark.parametrize("keepdims", [False, True])
def test_extreme_over_non_empty_axis_of_empty_array(fn, keepdims):
    expected = getattr(np, fn)(np.zeros((0, 3)), axis=1, keepdims=keepdims)
    got = getattr(xp, fn)(xp.zeros((0, 3)), axis=1, keepdims=keepdims)
    assert got.shape == expected.shape and got.dtype == expected.dtype
    with pytest.raises(ValueError, match="zero-size array"):
        getattr(xp, fn)(xp.zeros((0, 3)), axis=0)


@pytest.mark.parametrize("threads", [1, 2])
def test_cumsum_float32_is_numpys_sequential_sum_at_any_thread_count(threads):
    # PyTorch's multithreaded scan sums in another order (1 % off NumPy's value at 1e6 elements)
    import torch
    prev = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        expected = np.cumsum(np.full(10**6, 0.1, np.float32))
        got = xp.cumsum(xp.full(10**6, 0.1, dtype=xp.float32))
    finally:
        torch.set_num_threads(prev)
    np.testing.assert_array_equal(xp.asnumpy(got), expected)
