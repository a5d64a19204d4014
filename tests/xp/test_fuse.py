"""xp.fuse: equal to the unfused function, compiled by torch.compile into generated npu kernels,
cached per input dtypes/ndims; errors for what cannot be fused."""
import re

import numpy as np
import pytest
import torch
from torch._inductor.utils import run_and_get_code

import npudist.xp as xp


def _np(a):
    return xp.asnumpy(a)


def _kernels(codes):
    """Names of the C++ kernels Inductor generated (one 'cpp_fused_*' per fused loop nest; npu
    wrappers bind them through npu_cpp_pybinding, docs/graph.md)."""
    pattern = r"\b(cpp_fused_\w+)\s*=\s*(?:npu_cpp_pybinding\(\s*)?async_compile"
    return sorted({m for c in codes for m in re.findall(pattern, c)})


@xp.fuse(kernel_name="squared_diff")
def squared_diff(x, y, c):
    return (x - y) * (x - y) * c + xp.sin(x)


@xp.fuse
def normalize(x):
    s = xp.sum(x * x, axis=-1, keepdims=True)
    return x / xp.sqrt(s + 1e-6), xp.max(x)


def test_fuse_equals_unfused_and_generates_one_kernel():
    rng = np.random.default_rng(0)
    x = xp.asarray(rng.random((64, 33), dtype=np.float32))
    y = xp.asarray(rng.random(33, dtype=np.float32))
    squared_diff.clear_cache()
    r, codes = run_and_get_code(squared_diff, x, y, 2.0)
    ref = squared_diff.func(x, y, 2.0)
    assert r.dtype == ref.dtype == np.float32 and r.shape == ref.shape
    np.testing.assert_allclose(_np(r), _np(ref), rtol=1e-6)
    # the elementwise chain (5 ufuncs unfused) is one generated loop
    assert len(_kernels(codes)) == 1, codes
    assert r.device == x.device
    assert squared_diff.__name__ == "squared_diff" and squared_diff.cache_info() == {"variants": 1}
    # another shape of the same ndims reuses the compiled variant (dynamic shapes)
    x2 = xp.asarray(rng.random((5, 7), dtype=np.float32))
    y2 = xp.asarray(rng.random(7, dtype=np.float32))
    np.testing.assert_allclose(_np(squared_diff(x2, y2, 2.0)), _np(squared_diff.func(x2, y2, 2.0)), rtol=1e-6)
    assert squared_diff.cache_info() == {"variants": 1}
    # another dtype is another variant; NumPy's promotion holds (float64 scalar stays weak)
    xd = xp.asarray(rng.random((3, 4)))
    rd = squared_diff(xd, xd[0], 0.5)
    assert rd.dtype == np.float64
    np.testing.assert_allclose(_np(rd), _np(squared_diff.func(xd, xd[0], 0.5)))
    assert squared_diff.cache_info() == {"variants": 2}


def test_fuse_reductions_and_tuples():
    x = xp.asarray(np.random.default_rng(1).random((16, 10), dtype=np.float32) - 0.5)
    (n, m), codes = run_and_get_code(normalize, x)
    rn, rm = normalize.func(x)
    np.testing.assert_allclose(_np(n), _np(rn), rtol=1e-5)
    assert float(m) == float(rm) and m.shape == ()
    assert _kernels(codes)      # generated, not run op by op


def test_fuse_errors_and_numpy_inputs():
    with pytest.raises(TypeError, match="keyword"):
        squared_diff(x=1, y=2, c=3)
    with pytest.raises(Exception) as fused_err:          # the error the unfused function gives
        squared_diff(xp.ones((2, 3)), xp.ones(4), 1.0)
    with pytest.raises(Exception) as plain_err:
        squared_diff.func(xp.ones((2, 3)), xp.ones(4), 1.0)
    assert type(fused_err.value) is type(plain_err.value) and str(fused_err.value) == str(plain_err.value)
    with pytest.raises(TypeError, match="emulated"):
        squared_diff(xp.ones(3, dtype=xp.uint32), xp.ones(3, dtype=xp.uint32), 1)

    @xp.fuse
    def not_arrays(x):
        return 3

    with pytest.raises(TypeError, match="returned a int"):
        not_arrays(xp.ones(2))

    @xp.fuse
    def reads_a_value(x):
        return x * float(x[0])

    with pytest.raises(TypeError, match="cannot be traced"):
        reads_a_value(xp.ones(2))
    # without xp arrays among the arguments the plain function runs, as cupy.fuse does
    a = np.arange(3.0)
    np.testing.assert_allclose(_np(squared_diff(a, a, 1.0)), np.sin(a))
    with xp.Device(1):
        b = xp.ones(3, dtype=xp.float32)
    with pytest.raises(ValueError, match="Peer access is unavailable"):
        squared_diff(b, b, 1.0)


@pytest.mark.slow
def test_fuse_guards_broadcasting_and_devices():
    rng = np.random.default_rng(2)
    # size-1 (broadcast) dims are part of the key: (4, 1) and (4, 5) are different variants
    for shape in [(4, 5), (4, 1), (1, 5), (0, 5), (7, 5)]:
        x = xp.asarray(rng.random(shape, dtype=np.float32))
        y = xp.asarray(rng.random(5, dtype=np.float32))
        np.testing.assert_allclose(_np(squared_diff(x, y, 3.0)), _np(squared_diff.func(x, y, 3.0)), rtol=1e-6)
    with xp.Device(2):
        x = xp.asarray(rng.random((3, 5), dtype=np.float32))
        r = squared_diff(x, x[0], 1.0)
        assert r.device.id == 2
        np.testing.assert_allclose(_np(r), _np(squared_diff.func(x, x[0], 1.0)), rtol=1e-6)
    # in-place updates of an input are applied to it
    @xp.fuse
    def axpy_(x, y):
        x += 2 * y
        return x
    x = xp.ones(4, dtype=xp.float32)
    axpy_(x, xp.ones(4, dtype=xp.float32))
    assert _np(x).tolist() == [3.0] * 4
    # a boolean mask (value-dependent size) is traced, not refused
    @xp.fuse
    def positive_doubled(x):
        return x[x > 0.5] * 2
    for _ in range(2):
        x = xp.asarray(rng.random(20, dtype=np.float32))
        np.testing.assert_array_equal(_np(positive_doubled(x)), _np(positive_doubled.func(x)))
    # npu tensors are accepted like arrays
    t = torch.ones(3, device="npu")
    assert _np(squared_diff(t, t, 1.0)).tolist() == pytest.approx(np.sin(np.ones(3)).tolist())
