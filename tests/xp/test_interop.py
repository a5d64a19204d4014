"""DLPack and torch zero-copy interop, NumPy in/out, float64 modes, random."""
import types

import numpy as np
import pytest
import torch

import npudist.xp as xp


@pytest.mark.parametrize("dtype", [np.bool_, np.int8, np.int64, np.uint8, np.float16, np.float32, np.float64,
                                   np.complex128], ids=lambda d: np.dtype(d).name)
def test_dlpack_to_torch_is_zero_copy(dtype):
    a = xp.asarray(np.arange(12).reshape(3, 4).astype(dtype))
    t = torch.from_dlpack(a)
    assert t.device.type == "npu" and t.data_ptr() == a._t.data_ptr()
    assert t.dtype == a._t.dtype and tuple(t.shape) == a.shape
    v = a[:, 1:]
    tv = torch.from_dlpack(v)
    assert tv.data_ptr() == v._t.data_ptr() and tv.stride() == v._t.stride()


def test_dlpack_shares_writes_both_ways():
    a = xp.zeros(4, dtype=np.float32)
    t = torch.from_dlpack(a)
    t[1] = 5
    assert a.tolist() == [0, 5, 0, 0]
    a[2] = 7
    assert t.tolist() == [0, 5, 7, 0]
    assert a.__dlpack_device__() == (12, a._t.device.index)


def test_asarray_npu_tensor_shares_memory_and_from_dlpack():
    t = torch.arange(6, device="npu", dtype=torch.float32)
    a = xp.asarray(t)
    assert a._t.data_ptr() == t.data_ptr()
    a[0] = 42
    assert t[0].item() == 42
    b = xp.from_dlpack(t)
    assert b._t.data_ptr() == t.data_ptr()
    c = xp.from_dlpack(a)
    assert c._t.data_ptr() == a._t.data_ptr()
    h = xp.from_dlpack(np.arange(3.0))  # host producer: copied onto the npu
    assert h.device.type == "npu" and h.tolist() == [0.0, 1.0, 2.0]
    with pytest.raises(BufferError):
        xp.from_dlpack(np.arange(3.0), copy=False)
    assert xp.to_torch(a) is a._t


def test_host_export_through_dlpack_copies():
    a = xp.arange(3)
    cap = a.__dlpack__(dl_device=(1, 0))
    t = torch.from_dlpack(cap)
    assert t.device.type == "cpu" and t.tolist() == [0, 1, 2]
    with pytest.raises(BufferError):
        a.__dlpack__(dl_device=(1, 0), copy=False)


def test_numpy_in_numpy_out():
    n = np.arange(6, dtype=np.int16).reshape(2, 3)[:, ::-1]  # non-contiguous, negative strides
    a = xp.asarray(n)
    out = xp.asnumpy(a * 2)
    assert isinstance(out, np.ndarray) and out.dtype == np.int16
    np.testing.assert_array_equal(out, n * 2)
    be = np.arange(3, dtype=">i4")  # big-endian input
    assert xp.asarray(be).tolist() == [0, 1, 2]


def test_array_namespace():
    a = xp.arange(3)
    ns = a.__array_namespace__()
    assert ns.__array_api_version__ == "2024.12"
    assert ns.uint32 == np.dtype("uint32") and ns.uint64 == np.dtype("uint64") and ns.int8 == np.dtype("int8")
    assert ns.__array_namespace_info__().dtypes(kind="unsigned integer") == {
        n: np.dtype(n) for n in ("uint8", "uint16", "uint32", "uint64")}
    assert ns.sum(a).item() == 3
    with pytest.raises(ValueError):
        a.__array_namespace__(api_version="2099.01")


# ---- float64 modes ----------------------------------------------------------------------------------
def test_float64_mode_float32_demotes_and_casts_back():
    x = xp.asarray([1.0 + 1e-12, 2.0, 3.0])
    exact = (x - 1.0).get()
    assert exact[0] != 0.0
    with xp.float64_mode("float32"):
        d = x - 1.0
        s = xp.sum(x * 1e-12 + 1.0)
        m = xp.linalg.inv(xp.eye(2) * 3)
        f = xp.fft.fft(x)
    assert d.dtype == np.float64 and d.get()[0] == 0.0  # float32 precision: 1e-12 is lost
    assert s.dtype == np.float64 and m.dtype == np.float64 and f.dtype == np.complex128
    np.testing.assert_allclose(m.get(), np.eye(2) / 3, rtol=1e-6)


def test_float64_mode_cpu_is_exact():
    x = xp.asarray([1.0 + 1e-12, 2.0])
    with xp.float64_mode("cpu"):
        d = x - 1.0
        s = xp.sum(x)
    assert d.device.type == "npu" and d.get()[0] == pytest.approx(1e-12, rel=1e-3)
    assert s.item() == 3.0 + 1e-12


def test_float64_mode_leaves_other_dtypes_alone():
    with xp.float64_mode("float32"):
        i = xp.asarray([2**40 + 1]) + 1
        assert i.item() == 2**40 + 2


def test_float64_mode_validation_and_env(python):
    with pytest.raises(ValueError, match="float64 mode"):
        xp.set_float64_mode("fast")
    r = python("import npudist.xp as xp; print(xp.get_float64_mode()); "
               "print((xp.asarray([1.0 + 1e-12]) - 1.0).item())", env={"NPUDIST_XP_FLOAT64_MODE": "float32"})
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["float32", "0.0"]
    from npudist.xp import _config
    with pytest.raises(ValueError, match="NPUDIST_XP_FLOAT64_MODE='bogus' is not a float64 mode"):
        _config._parse_mode("bogus", _config.ENV_VAR)


# ---- random ---------------------------------------------------------------------------------------
def test_generator_reproducible_and_api():
    g1, g2 = xp.random.default_rng(42), xp.random.default_rng(42)
    assert g1.random(5).tolist() == g2.random(5).tolist()
    assert g1.integers(0, 10, 100).tolist() == g2.integers(0, 10, 100).tolist()
    assert xp.random.default_rng(1).random(3).tolist() != xp.random.default_rng(2).random(3).tolist()
    g = xp.random.default_rng(0)
    assert g.random().ndim == 0 and g.random(dtype=np.float32, size=(2, 3)).dtype == np.float32
    i = g.integers(5, 8, size=1000, dtype=np.int8)
    assert i.dtype == np.int8 and set(i.tolist()) == {5, 6, 7}
    assert set(g.integers(1, 3, 500, endpoint=True).tolist()) == {1, 2, 3}
    with pytest.raises(ValueError):
        g.integers(5, 5)
    with pytest.raises(ValueError, match="scale < 0"):
        g.normal(0, -1)


@pytest.mark.parametrize("name,args,mean,var", [
    ("standard_normal", (), 0.0, 1.0), ("normal", (3.0, 2.0), 3.0, 4.0), ("uniform", (-1.0, 3.0), 1.0, 16 / 12),
    ("exponential", (2.0,), 2.0, 4.0), ("gamma", (3.0, 2.0), 6.0, 12.0), ("gamma", (0.5,), 0.5, 0.5),
    ("beta", (2.0, 3.0), 0.4, 0.04), ("poisson", (4.0,), 4.0, 4.0), ("binomial", (10, 0.3), 3.0, 2.1),
    ("chisquare", (3.0,), 3.0, 6.0), ("laplace", (1.0, 2.0), 1.0, 8.0), ("geometric", (0.25,), 4.0, 12.0),
    ("logistic", (0.0, 1.0), 0.0, np.pi ** 2 / 3), ("standard_t", (10.0,), 0.0, 10 / 8),
])
def test_distribution_moments(name, args, mean, var):
    g = xp.random.default_rng(123)
    x = getattr(g, name)(*args, size=50_000).get().astype(np.float64)
    assert x.shape == (50_000,)
    se = np.sqrt(var / x.size)
    assert abs(x.mean() - mean) < 6 * se + 1e-3, (x.mean(), mean)
    assert abs(x.var() - var) < 0.08 * var + 1e-3, (x.var(), var)


def test_permutations_and_choice():
    g = xp.random.default_rng(5)
    p = g.permutation(50).tolist()
    assert sorted(p) == list(range(50)) and p != list(range(50))
    a = xp.arange(20).reshape(10, 2)
    q = g.permutation(a)
    assert sorted(q[:, 0].tolist()) == list(range(0, 20, 2))
    g.shuffle(a)
    assert sorted(a[:, 0].tolist()) == list(range(0, 20, 2))
    c = g.choice(10, size=5, replace=False).tolist()
    assert len(set(c)) == 5
    w = g.choice(3, size=20_000, p=[0.1, 0.0, 0.9]).get()
    assert (w != 1).all() and abs((w == 2).mean() - 0.9) < 0.02
    with pytest.raises(ValueError, match="larger sample"):
        g.choice(3, 5, replace=False)
    m = g.multinomial(20, [0.2, 0.3, 0.5], size=4)
    assert m.shape == (4, 3) and (m.sum(axis=1).get() == 20).all()


def test_legacy_module_functions():
    xp.random.seed(3)
    a = xp.random.rand(2, 3)
    xp.random.seed(3)
    assert xp.random.rand(2, 3).tolist() == a.tolist()
    assert xp.random.randn(4).shape == (4,) and xp.random.randint(0, 5, size=7).dtype == np.int64
    assert 0 <= xp.random.random_sample() < 1 and xp.random.random((2,)).shape == (2,)
    assert xp.random.choice([1, 2, 3], 2).shape == (2,)


def test_array_namespace_is_the_registered_module():
    # the core's __array_namespace__ returns what npudist.xp registered at import (_core._namespace)
    from npudist.xp._core import _namespace

    a = xp.arange(3)
    ns = xp.array_namespace()
    assert all(a.__array_namespace__(api_version=v) is ns for v in (None, *_namespace.API_VERSIONS))
    _namespace.register(ns)     # the same module again: accepted
    with pytest.raises(RuntimeError, match="registered already"):
        _namespace.register(types.ModuleType("other"))
