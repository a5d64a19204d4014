"""pad: every NumPy mode, stat_length, reflect_type='odd', end_values, keyword checks."""
import numpy as np
import pytest

import npudist.xp as xp

CASES = [("maximum", {"stat_length": 2}), ("minimum", {"stat_length": (2, 4)}),
         ("mean", {"stat_length": ((2, 4), (3, 5))}), ("mean", {}), ("median", {}), ("reflect", {"reflect_type": "odd"}),
         ("symmetric", {"reflect_type": "odd"}), ("linear_ramp", {"end_values": (5, -4)}), ("edge", {}), ("wrap", {}),
         ("constant", {"constant_values": (1, 2)})]


@pytest.mark.parametrize("mode,kw", CASES, ids=[f"{m}-{k}" for m, k in CASES])
def test_pad_modes(mode, kw):
    a = np.arange(60).reshape(3, 20)
    for pw in (1, [1, 2], [[1, 2], [3, 4]]):
        for arr in (a, a.astype(np.float32)):
            got, want = xp.pad(arr, pw, mode, **kw).get(), np.pad(arr, pw, mode, **kw)
            assert got.dtype == want.dtype
            np.testing.assert_allclose(got, want)


def test_pad_errors():
    with pytest.raises(ValueError, match="unsupported keyword"):
        xp.pad(xp.arange(4), 1, "edge", notallowedkeyword=3)
    with pytest.raises(TypeError):
        xp.pad(xp.arange(4), [], "constant")
    assert xp.pad(xp.arange(4), 2, "empty").shape == (8,)


def test_pad_complex_extremes():
    a = (np.arange(12).reshape(3, 4) + 1j * np.arange(12)[::-1].reshape(3, 4)).astype(np.complex64)
    for mode in ("maximum", "minimum"):
        np.testing.assert_array_equal(xp.pad(a, 2, mode, stat_length=2).get(), np.pad(a, 2, mode, stat_length=2))


@pytest.mark.parametrize("mode", ["reflect", "symmetric"])
@pytest.mark.parametrize("dtype", [np.int64, np.int8, np.float64])
def test_odd_reflection_wider_than_the_axis(mode, dtype):
    """NumPy pads one period per step, reflecting the padded array about its current edge."""
    for shape, pw in (((2, 3), [1, 2]), ((2, 3), [[1, 2], [3, 4]]), ((2, 3), [[7, 9], [0, 11]]), ((5,), 13),
                      ((1, 4), [[2, 3], [5, 6]]), ((3, 1), [[2, 13], [4, 4]])):
        a = (np.arange(int(np.prod(shape)), dtype=dtype).reshape(shape) * 3 - 2).astype(dtype)
        want = np.pad(a, pw, mode=mode, reflect_type="odd")
        got = xp.pad(xp.asarray(a), pw, mode=mode, reflect_type="odd")
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got.get(), want)


@pytest.mark.parametrize("dtype, value", [("uint8", 300), ("uint8", -1.7), ("int32", 2.7), ("int32", ((1, 2), (3, 4)))])
def test_pad_constant_values_cast_unsafely_as_numpy(dtype, value):
    a = np.ones((2, 2), dtype=dtype)
    with np.errstate(all="ignore"):
        expected = np.pad(a, 1, constant_values=value)
    np.testing.assert_array_equal(xp.asnumpy(xp.pad(xp.asarray(a), 1, constant_values=value)), expected)
