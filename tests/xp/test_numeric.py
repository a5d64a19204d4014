"""gradient, unwrap, trapezoid, correlate, real_if_close, trim_zeros equal NumPy's."""
import numpy as np
import pytest

import npudist.xp as xp

F = np.array([1, 2, 4, 7, 11, 16.0])
X = np.array([0.0, 1, 1.5, 3.5, 4, 6])


@pytest.mark.parametrize("edge_order", [1, 2])
def test_gradient(edge_order):
    for args in ((), (2.0,), (X,)):
        got = xp.gradient(xp.asarray(F), *[xp.asarray(a) if isinstance(a, np.ndarray) else a for a in args],
                          edge_order=edge_order)
        np.testing.assert_allclose(got.get(), np.gradient(F, *args, edge_order=edge_order))
    g = np.arange(12).reshape(3, 4) ** 2
    for u, v in zip(xp.gradient(xp.asarray(g), edge_order=edge_order), np.gradient(g, edge_order=edge_order)):
        assert u.dtype == v.dtype
        np.testing.assert_allclose(u.get(), v)
    f32 = F.astype(np.float32)
    assert xp.gradient(f32, axis=0).dtype == np.gradient(f32, axis=0).dtype
    with pytest.raises(ValueError, match="too small"):
        xp.gradient(xp.asarray([1.0]), edge_order=edge_order)


def test_unwrap_trapezoid_correlate():
    ph = np.linspace(0, 20, 30) % (2 * np.pi)
    np.testing.assert_allclose(xp.unwrap(ph).get(), np.unwrap(ph))
    ints = [0, 1, 2, 3, 4, 5, 6, 7, 8]
    np.testing.assert_array_equal(xp.unwrap(ints, period=4).get(), np.unwrap(ints, period=4))
    y = np.arange(12.0).reshape(3, 4) ** 2
    np.testing.assert_allclose(xp.trapezoid(y).get(), np.trapezoid(y))
    np.testing.assert_allclose(xp.trapezoid(y, x=[0, 1, 3], axis=0).get(), np.trapezoid(y, x=[0, 1, 3], axis=0))
    a, v = [1, 2, 3, 4.0], [0, 1, 0.5]
    for mode in ("valid", "same", "full"):
        np.testing.assert_allclose(xp.correlate(a, v, mode).get(), np.correlate(a, v, mode))


def test_real_if_close_and_trim_zeros():
    assert xp.real_if_close([2.1 + 1e-15j]).dtype == np.float64
    assert xp.real_if_close([2.1 + 1e-3j]).dtype == np.complex128
    z = np.array([0, 0, 1, 2, 0, 3, 0, 0])
    for trim in ("fb", "f", "b"):
        np.testing.assert_array_equal(xp.trim_zeros(z, trim).get(), np.trim_zeros(z, trim))
    np.testing.assert_array_equal(xp.trim_zeros(np.zeros(3)).get(), np.trim_zeros(np.zeros(3)))
    with pytest.raises(ValueError):
        xp.trim_zeros(z, "x")


def test_complex_convolve_correlate():
    a = (np.arange(5) + 1) * (1 + 1j)
    v = (np.arange(6) + 1) * (1 - 2j)
    for mode in ("valid", "same", "full"):
        np.testing.assert_allclose(xp.correlate(a, v, mode).get(), np.correlate(a, v, mode))
        np.testing.assert_allclose(xp.convolve(a, v, mode).get(), np.convolve(a, v, mode))
    assert xp.convolve(a.astype(np.complex64), v.astype(np.complex64)).dtype == np.complex64


def test_fft_out_and_empty_axes():
    a = xp.asarray(np.random.default_rng(0).random((4, 4)))
    o = xp.empty((4, 4), dtype=complex)
    assert xp.fft.fft2(a, out=o) is o
    np.testing.assert_allclose(o.get(), np.fft.fft2(a.get()))
    assert xp.fft.fftn(a, axes=()) is a
    with pytest.raises(TypeError, match="cast"):
        xp.fft.fft(a, out=xp.empty((4, 4)))


@pytest.mark.parametrize("n1,n2", [(5, 6), (6, 5), (20, 21), (21, 20), (5, 20), (6, 21)])
@pytest.mark.parametrize("mode", ["valid", "same", "full"])
def test_correlate_longer_v(n1, n2, mode):
    # NumPy correlates the longer sequence with the shorter and reverses: 'same' centres differently
    a = np.arange(1, n1 + 1, dtype=float)
    for v in (np.arange(2, n2 + 2, dtype=float), np.arange(2, n2 + 2) * (1 + 1j)):
        np.testing.assert_allclose(xp.correlate(xp.asarray(a), xp.asarray(v), mode).get(), np.correlate(a, v, mode))


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", "complex64"])
@pytest.mark.parametrize("edge_order", [1, 2])
@pytest.mark.parametrize("spacing", [(1 / 3, 2 / 3, 1.0), (0.7,), ()])
def test_gradient_scalar_spacing_exact_like_numpy(dtype, edge_order, spacing):
    # NumPy casts each weak spacing coefficient to the array's dtype before its float16/float32 loops
    x = (np.random.default_rng(0).random((10, 20, 30)) * 30).astype(dtype)
    want = np.gradient(x, *spacing, edge_order=edge_order)
    got = xp.gradient(xp.asarray(x), *spacing, edge_order=edge_order)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype
        np.testing.assert_array_equal(xp.asnumpy(g), w)
