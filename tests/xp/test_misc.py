"""npudist.xp._misc against NumPy: nan_to_num, interp, convolve (and clip's argument rules)."""
import warnings

import numpy as np
import pytest

import npudist.xp as xp

inf, nan = np.inf, np.nan


@pytest.mark.parametrize("kwarg", ["nan", "posinf", "neginf"])
@pytest.mark.parametrize("shape", [(2, 4), (2, 1), (1, 4), ()])
@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", "complex64"])
def test_nan_to_num_array_replacements(kwarg, shape, dtype):
    data = np.array([[0, 1, nan, 4], [11, inf, 12, -inf]]).astype(dtype)
    if np.dtype(dtype).kind == "c":
        data = data + 1j * data[::-1]
    y = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape) + 7
    want = np.nan_to_num(data, **{kwarg: y})
    got = xp.nan_to_num(xp.asarray(data), **{kwarg: xp.asarray(y)})
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(xp.asnumpy(got), want)


def test_nan_to_num_errors_in_place_and_other_dtypes():
    x = xp.asarray([0.0, nan, 4.0])
    with pytest.raises(ValueError, match="broadcast"):
        xp.nan_to_num(x, nan=xp.zeros((2, 3)))
    with pytest.raises(TypeError, match="same_kind"):
        xp.nan_to_num(x, nan=xp.asarray([1j, 1j, 1j]))
    r = xp.nan_to_num(x, copy=False, nan=-1.0)
    assert r is x and x.tolist() == [0.0, -1.0, 4.0]
    i = xp.asarray([1, 2], dtype="uint32")
    c = xp.nan_to_num(i)
    assert c.dtype == np.uint32 and c is not i and xp.nan_to_num(i, copy=False) is i


@pytest.mark.parametrize("x,xp_,fp,kw", [
    ([0.5, 1, 1.5, 2.5, -1, 3.5, nan], [0, 1, 2, 3], [0, 10, 5, 7], {}),
    ([0.5, 1, 1.5, 2.5], [0, 1, 2, 3], [inf, inf, 1, -inf], {}),            # NaN retried from the other end
    ([1.0], [0, 1, 2], [0, 2, inf], {}),                                   # x at a knot: fp there
    ([0.2, 0.4, 0.6, 0.9, 1.2], [0, 0.5, 1, 1.5], [0.8, nan, 0.3, 0.2], {}),
    ([-180, -170, -185, 185, -10, -5, 0, 365], [190, -190, 350, -350], [5, 10, 3, 4], {"period": 360}),
    ([0.5, 1.5, 5, -2], [0, 1, 2], [1j, 2 + 1j, 3], {"left": 9, "right": -9j}),
    ([0.0, 1, 2, 3], [0, 1, 1, 2], [0, 1, 2, 3], {}),
    ([0.0, 0.2, 1, 2], [0.0], [5.0], {}),
    ([0, 1, 2, 4, 6, 8, 9, 10], [1, 3, 5, 7, nan], [1, 2, 3, 4, 5], {}),   # xp sorted with a NaN last
])
def test_interp_like_numpy(x, xp_, fp, kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = np.interp(np.array(x), np.array(xp_), np.array(fp), **kw)
    got = xp.interp(xp.asarray(x), xp.asarray(xp_), xp.asarray(fp), **kw)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(xp.asnumpy(got), want)


def test_interp_period_zero_raises():
    with pytest.raises(ValueError, match="period"):
        xp.interp(xp.asarray([1.0]), xp.asarray([0.0, 1.0]), xp.asarray([0.0, 1.0]), period=0)


@pytest.mark.parametrize("mode", ["full", "same", "valid"])
def test_convolve_refuses_more_than_1d(mode):
    with pytest.raises(ValueError, match="too deep"):
        xp.convolve(xp.ones((2, 3)), xp.ones(5), mode=mode)
    np.testing.assert_array_equal(xp.asnumpy(xp.convolve(xp.asarray(2.0), xp.asarray([1.0, 2.0]))),
                                  np.convolve(2.0, [1.0, 2.0]))


def test_clip_positional_bounds_go_together():
    a = xp.arange(5)
    with pytest.raises(TypeError, match="a_max"):
        xp.clip(a, 3)
    with pytest.raises(TypeError, match="a_min"):
        xp.clip(a, a_max=3)
    assert xp.clip(a, max=2).tolist() == np.clip(np.arange(5), max=2).tolist()
    assert a.clip(3).tolist() == np.arange(5).clip(3).tolist()      # the method takes one bound


@pytest.mark.parametrize("decimals", [-1, 0, 2])
def test_round_of_bool_like_numpy(decimals):
    a = np.array([True, False, True])
    if decimals == 0:
        got = xp.round(xp.asarray(a), decimals)
        assert got.dtype == np.round(a, 0).dtype == np.float16
        np.testing.assert_array_equal(xp.asnumpy(got), np.round(a, 0))
        return
    with pytest.raises(TypeError):
        np.round(a, decimals)
    with pytest.raises(TypeError, match="bool"):
        xp.round(xp.asarray(a), decimals)


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", "int8", "uint32", "bool"])
def test_i0_like_numpy(dtype):
    a = np.arange(-3, 12).astype(dtype)
    want = np.i0(a)
    got = xp.i0(xp.asarray(a))
    assert got.dtype == want.dtype
    np.testing.assert_allclose(xp.asnumpy(got), want, rtol=2e-3 if dtype == "float16" else 1e-6)  # float16: NumPy 1 ulp off
    with pytest.raises(TypeError, match="complex"):
        xp.i0(xp.ones(2, dtype="complex64"))


@pytest.mark.parametrize("value", [[[1.0, 2], [3, 4]], [1j, 2], 1j, 3, True, np.complex64(1), np.ones(2)])
def test_iscomplexobj_isrealobj_of_non_arrays_like_numpy(value):
    assert xp.iscomplexobj(value) == np.iscomplexobj(value)
    assert xp.isrealobj(value) == np.isrealobj(value)
    assert xp.iscomplexobj(xp.ones(2, dtype="complex64")) and xp.isrealobj(xp.ones(2))


@pytest.mark.parametrize("decimals", [1, 2, 3, -1])
@pytest.mark.parametrize("n", [3, 100_000])
def test_round_float16_scales_in_float16(decimals, n):
    a = (np.random.default_rng(1).standard_normal(n) * 10).astype(np.float16)
    a[:3] = [0.295, 0.8853, -0.865]
    np.testing.assert_array_equal(xp.asnumpy(xp.round(xp.asarray(a), decimals)), np.round(a, decimals))
