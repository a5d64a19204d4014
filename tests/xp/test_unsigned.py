"""uint16 / uint32 / uint64 are exact: wraparound, comparisons, division, shifts, reductions in uint64."""
import numpy as np
import pytest
import torch

import npudist.xp as xp

UDTYPES = [np.uint16, np.uint32, np.uint64]


def _pair(dt):
    info = np.iinfo(dt)
    a = np.array([0, 1, 5, 7, info.max, info.max - 3, info.max // 2 + 1, 12345], dtype=dt)
    b = np.array([3, 2, 1, 9, 2, info.max, 5, 0], dtype=dt)
    return a, b


def _same(got, want):
    got = xp.asnumpy(got)
    assert got.dtype == np.asarray(want).dtype, (got.dtype, np.asarray(want).dtype)
    np.testing.assert_array_equal(got, want)


BINARY = ["add", "subtract", "multiply", "floor_divide", "remainder", "true_divide", "maximum", "minimum",
          "less", "less_equal", "greater", "greater_equal", "equal", "not_equal", "bitwise_and", "bitwise_or",
          "bitwise_xor", "left_shift", "right_shift", "fmod", "gcd"]


@pytest.mark.parametrize("dt", UDTYPES, ids=lambda d: np.dtype(d).name)
def test_binary_ufuncs_exact(dt):
    a, b = _pair(dt)
    shift = (b % (8 * np.dtype(dt).itemsize)).astype(dt)
    for name in BINARY:
        y = shift if "shift" in name else b
        with np.errstate(all="ignore"):
            want = getattr(np, name)(a, y)
        _same(getattr(xp, name)(xp.asarray(a), xp.asarray(y)), want)


@pytest.mark.parametrize("dt", UDTYPES, ids=lambda d: np.dtype(d).name)
def test_unary_scalars_and_mixed(dt):
    a, _ = _pair(dt)
    x = xp.asarray(a)
    with np.errstate(all="ignore"):
        for name in ("negative", "invert", "absolute", "sign", "square"):
            _same(getattr(xp, name)(x), getattr(np, name)(a))
        _same(x + 1, a + 1)                        # wraps at the top
        _same(x - 1, a - 1)                        # wraps at zero
        _same(x * 3, a * 3)
        _same(x // 3, a // 3)
        _same(x > 2, a > 2)
        _same(x + np.int8(1), a + np.int8(1))      # NumPy 2 promotion (uint64 + int8 -> float64)
        _same(x.astype(np.float64), a.astype(np.float64))
        _same(xp.asarray(a.astype(np.float32)).astype(dt), a.astype(np.float32).astype(dt))


@pytest.mark.parametrize("dt", UDTYPES, ids=lambda d: np.dtype(d).name)
def test_reductions_accumulate_as_numpy(dt):
    a, _ = _pair(dt)
    x = xp.asarray(a)
    for name in ("sum", "prod", "cumsum", "cumprod", "max", "min", "argmax", "argmin", "ptp", "sort", "argsort",
                 "unique", "mean"):
        _same(getattr(xp, name)(x), getattr(np, name)(a))
    _same(xp.sum(x.reshape(2, 4), axis=1), a.reshape(2, 4).sum(axis=1))
    _same(xp.sum(xp.asarray(a.astype(np.uint8))), a.astype(np.uint8).sum())


@pytest.mark.parametrize("dt", UDTYPES, ids=lambda d: np.dtype(d).name)
def test_indexing_and_manipulation(dt):
    a, b = _pair(dt)
    x = xp.asarray(a)
    _same(x[x > 6], a[a > 6])
    _same(xp.where(x > 6, x, xp.asarray(b)), np.where(a > 6, a, b))
    _same(xp.flip(x), a[::-1])
    _same(xp.concatenate([x, x]), np.concatenate([a, a]))
    _same(xp.clip(x, 2, 9), np.clip(a, 2, 9))
    _same(xp.arange(5, dtype=dt), np.arange(5, dtype=dt))
    y = x.copy()
    y[y > 6] = 3
    c = a.copy()
    c[c > 6] = 3
    _same(y, c)
    y[[0, 1]] = np.iinfo(dt).max
    c[[0, 1]] = np.iinfo(dt).max
    _same(y, c)


def test_uint_memory_is_plain_for_torch():
    a = np.array([2**63 + 5, 1], np.uint64)
    x = xp.asarray(a)
    t = xp.to_torch(x)
    assert type(t) is torch.Tensor and t.dtype == torch.uint64
    assert torch.from_dlpack(x).data_ptr() == t.data_ptr()
    _same(x, a)
    with pytest.raises(OverflowError):
        xp.asarray(a) + 2**64


def test_bitwise_count_every_integer_dtype():
    for dt in (np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64):
        info = np.iinfo(dt)
        a = np.array([0, 1, 7, info.max, info.min], dtype=dt)
        _same(xp.bitwise_count(a), np.bitwise_count(a))
