"""Elementwise functions against NumPy across dtypes, promotion tables, out=/where=, reduce/accumulate."""
import itertools

import numpy as np
import pytest

import npudist.xp as xp

from .compare import ALL_DTYPES, numpy_xp_compare, sample

UNARY_MATH = ["negative", "positive", "absolute", "sign", "sqrt", "cbrt", "square", "exp", "exp2", "expm1", "log",
              "log2", "log10", "log1p", "sin", "cos", "tan", "arcsin", "arccos", "arctan", "sinh", "cosh", "tanh",
              "arcsinh", "arccosh", "arctanh", "deg2rad", "rad2deg", "floor", "ceil", "trunc", "rint", "isnan",
              "isinf", "isfinite", "signbit", "logical_not", "conjugate", "fabs", "reciprocal"]
BINARY = ["add", "subtract", "multiply", "divide", "floor_divide", "remainder", "fmod", "power", "maximum", "minimum",
          "fmax", "fmin", "arctan2", "hypot", "copysign", "logaddexp", "logaddexp2", "bitwise_and", "bitwise_or",
          "bitwise_xor", "left_shift", "right_shift", "logical_and", "logical_or", "logical_xor", "equal",
          "not_equal", "less", "less_equal", "greater", "greater_equal", "gcd", "lcm", "nextafter", "heaviside"]
DOMAIN = {"arcsin": (-1, 1), "arccos": (-1, 1), "arctanh": (-0.9, 0.9), "arccosh": (1, 5), "log": (0.1, 5),
          "log2": (0.1, 5), "log10": (0.1, 5), "log1p": (-0.5, 5), "sqrt": (0, 5)}


def _domain_ok(name, dtype):
    dt = np.dtype(dtype)
    return dt.kind in "fc" or name not in DOMAIN


@pytest.mark.parametrize("name", UNARY_MATH)
@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=lambda d: np.dtype(d).name)
def test_unary(name, dtype):
    dt = np.dtype(dtype)
    fn_np = getattr(np, name)
    try:
        fn_np.resolve_dtypes((dt, None))
    except TypeError:
        with pytest.raises(TypeError):
            getattr(xp, name)(sample(xp, (3,), dtype))
        return
    lo, hi = DOMAIN.get(name, (None, None))
    if dt.kind in "iub" and name == "reciprocal":
        lo, hi = 1, 5
    if dt.kind in "iu" and name in DOMAIN:
        lo, hi = (1, 5)

    @numpy_xp_compare(rtol=1e-3 if dt in (np.float16, np.dtype(bool)) or dt.kind in "iu" and dt.itemsize <= 2 else None,
                      atol=1e-3 if dt.itemsize <= 2 else None)
    def check(xp):
        with np.errstate(all="ignore"):
            return getattr(xp, name)(sample(xp, (4, 5), dtype, low=lo, high=hi))
    check()


@pytest.mark.parametrize("name", BINARY)
@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=lambda d: np.dtype(d).name)
def test_binary_same_dtype(name, dtype):
    dt = np.dtype(dtype)
    try:
        getattr(np, name).resolve_dtypes((dt, dt, None))
    except TypeError:
        with pytest.raises(TypeError):
            getattr(xp, name)(sample(xp, (3,), dtype), sample(xp, (3,), dtype))
        return
    low = 0 if name in ("left_shift", "right_shift", "power", "gcd", "lcm") and dt.kind in "iu" else None
    high = 6 if name in ("left_shift", "right_shift", "power") and dt.kind in "iu" else None

    @numpy_xp_compare(rtol=3e-3 if dt == np.float16 else None, atol=3e-3 if dt == np.float16 else None)
    def check(xp):
        with np.errstate(all="ignore"):
            a = sample(xp, (4, 5), dtype, seed=1, low=low, high=high)
            b = sample(xp, (5,), dtype, seed=2, low=low, high=high)
            if name in ("floor_divide", "remainder", "fmod") and dt.kind in "fc":
                b = xp.where(b == 0, xp.asarray(1, dtype=dtype), b)
            return getattr(xp, name)(a, b)
    check()


PROMO_DTYPES = [np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.float16, np.float32, np.float64,
                np.complex64, np.complex128]


def test_promotion_table_arrays():
    """Every pair of dtypes: result dtype of add/multiply/divide/equal equals NumPy 2's."""
    mismatches = []
    for d1, d2 in itertools.product(PROMO_DTYPES, repeat=2):
        a_np, b_np = np.ones(2, d1), np.ones(2, d2)
        a, b = xp.asarray(a_np), xp.asarray(b_np)
        for name in ("add", "multiply", "divide", "equal", "maximum"):
            try:
                expected = getattr(np, name)(a_np, b_np).dtype
            except TypeError:
                continue
            got = getattr(xp, name)(a, b).dtype
            if got != expected:
                mismatches.append((name, d1, d2, got, expected))
    assert not mismatches, mismatches


@pytest.mark.parametrize("scalar", [True, 2, -3, 2.5, 1 + 2j])
def test_promotion_table_python_scalars_are_weak(scalar):
    for d in PROMO_DTYPES:
        a_np = np.ones(2, d)
        for op in ("__add__", "__radd__", "__mul__", "__truediv__", "__lt__", "__eq__"):
            try:
                with np.errstate(all="ignore"):
                    expected = getattr(a_np, op)(scalar)
            except (TypeError, OverflowError):
                continue
            if expected is NotImplemented:
                continue
            got = getattr(xp.asarray(a_np), op)(scalar)
            assert got.dtype == expected.dtype, (d, op, scalar, got.dtype, expected.dtype)
            np.testing.assert_allclose(got.get(), expected)


def test_numpy_scalars_and_0d_arrays_are_strong():
    a = xp.asarray(np.ones(3, np.float32))
    assert (a + np.float64(1)).dtype == np.float64
    assert (a + xp.asarray(1.0)).dtype == np.float64
    assert (xp.asarray(np.ones(3, np.int8)) + np.int64(1)).dtype == np.int64


def test_python_int_out_of_range_raises_like_numpy():
    a = xp.asarray(np.ones(3, np.int8))
    with pytest.raises(OverflowError, match="out of bounds for int8"):
        a + 300
    # comparisons with out-of-range ints are exact, as in NumPy 2
    assert not bool((a == 1000).any())
    assert bool((a < 1000).all())


def test_integer_division_by_zero_gives_zero_like_numpy():
    with np.errstate(all="ignore"):
        a_np, b_np = np.array([5, -7, 3], np.int32), np.array([0, 2, 0], np.int32)
        for name in ("floor_divide", "remainder", "fmod"):
            np.testing.assert_array_equal(getattr(xp, name)(xp.asarray(a_np), xp.asarray(b_np)).get(),
                                          getattr(np, name)(a_np, b_np))


def test_negative_integer_power_raises():
    with pytest.raises(ValueError, match="negative integer powers"):
        xp.asarray([2, 3]) ** xp.asarray([1, -1])


def test_shift_by_bit_width_or_more():
    a_np = np.array([1, -8, 3], np.int8)
    s_np = np.array([8, 9, 1], np.int8)
    np.testing.assert_array_equal(xp.left_shift(xp.asarray(a_np), xp.asarray(s_np)).get(), np.left_shift(a_np, s_np))
    np.testing.assert_array_equal(xp.right_shift(xp.asarray(a_np), xp.asarray(s_np)).get(), np.right_shift(a_np, s_np))


def test_out_and_where():
    a_np = np.arange(6, dtype=np.float32).reshape(2, 3)
    a = xp.asarray(a_np)
    out = xp.zeros((2, 3), dtype=np.float32)
    r = xp.add(a, 1, out=out)
    assert r is out
    np.testing.assert_array_equal(out.get(), a_np + 1)
    mask_np = np.array([True, False, True])
    out_np = np.full((2, 3), -1, np.float32)
    np.multiply(a_np, 2, out=out_np, where=mask_np)
    out2 = xp.full((2, 3), -1, dtype=np.float32)
    xp.multiply(a, 2, out=out2, where=xp.asarray(mask_np))
    np.testing.assert_array_equal(out2.get(), out_np)
    # same_kind casting into out, as NumPy
    with pytest.raises(TypeError, match="same_kind"):
        xp.add(a, 1.5, out=xp.zeros((2, 3), dtype=np.int64))
    xp.add(a, 1.5, out=xp.zeros((2, 3), dtype=np.int64), casting="unsafe")
    # positional out and tuple out
    o = xp.empty(3)
    xp.sqrt(xp.asarray([1.0, 4.0, 9.0]), o)
    np.testing.assert_array_equal(o.get(), [1, 2, 3])
    q, r = xp.divmod(xp.asarray([7, -7]), 2)
    np.testing.assert_array_equal(q.get(), [3, -4])
    np.testing.assert_array_equal(r.get(), [1, 1])


def test_dtype_argument():
    a_np = np.arange(5, dtype=np.int16)
    r = xp.add(xp.asarray(a_np), 1, dtype=np.float32)
    assert r.dtype == np.float32
    np.testing.assert_array_equal(r.get(), np.add(a_np, 1, dtype=np.float32))


@pytest.mark.parametrize("name", ["add", "multiply", "maximum", "minimum", "logical_and", "logical_or",
                                  "bitwise_xor", "bitwise_or", "fmax"])
@pytest.mark.parametrize("dtype", [np.bool_, np.int8, np.int32, np.float32, np.float64], ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("axis", [0, 1, None])
def test_reduce(name, dtype, axis):
    if name.startswith("bitwise") and np.dtype(dtype).kind == "f":
        return
    if name == "fmax" and axis is None:
        return

    @numpy_xp_compare()
    def check(xp):
        return getattr(xp, name).reduce(sample(xp, (4, 5), dtype, low=1, high=4), axis=axis)
    check()


@pytest.mark.parametrize("name", ["add", "multiply", "maximum", "minimum", "logical_or"])
@pytest.mark.parametrize("dtype", [np.int8, np.int64, np.float32], ids=lambda d: np.dtype(d).name)
def test_accumulate(name, dtype):
    @numpy_xp_compare()
    def check(xp):
        return getattr(xp, name).accumulate(sample(xp, (4, 5), dtype, low=1, high=3), axis=1)
    check()


def test_outer():
    @numpy_xp_compare()
    def check(xp):
        return xp.multiply.outer(xp.arange(3), xp.arange(4.0))
    check()


def test_special_values_float():
    vals = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-310, 1.0, -1.5], np.float64)
    for name in ("sign", "sqrt", "floor", "exp", "log", "isfinite", "signbit", "rint", "trunc"):
        with np.errstate(all="ignore"):
            expected = getattr(np, name)(vals)
        got = getattr(xp, name)(xp.asarray(vals)).get()
        np.testing.assert_array_equal(got, expected, err_msg=name)


@pytest.mark.slow
@pytest.mark.parametrize("name", BINARY)
def test_binary_every_dtype_pair(name):
    """Full sweep: every ordered pair of dtypes against NumPy (values and result dtype)."""
    for d1, d2 in itertools.product(ALL_DTYPES, repeat=2):
        try:
            getattr(np, name).resolve_dtypes((np.dtype(d1), np.dtype(d2), None))
        except TypeError:
            continue
        low = 0 if name in ("left_shift", "right_shift", "power", "gcd", "lcm") else None
        high = 6 if name in ("left_shift", "right_shift", "power") else None

        @numpy_xp_compare(rtol=3e-3, atol=3e-3)
        def check(xp):
            with np.errstate(all="ignore"):
                a = sample(xp, (3, 4), d1, seed=1, low=low, high=high)
                b = sample(xp, (4,), d2, seed=2, low=low, high=high)
                if name in ("floor_divide", "remainder", "fmod", "divide"):
                    b = xp.where(b == 0, xp.asarray(1, dtype=d2), b)
                return getattr(xp, name)(a, b)
        check()


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.int8, np.int64])
@pytest.mark.parametrize("op", ["mul", "add", "div", "lt", "max"])
def test_weak_python_scalar_is_cast_to_the_loop_dtype_first(dtype, op):
    # NumPy 2 casts a Python scalar to the loop dtype, then computes; xp passes it as a host 0-d
    # tensor of that dtype (bit-exact, float16 included)
    a = (np.linspace(-3, 3, 50) * (1 if np.dtype(dtype).kind == "f" else 10)).astype(dtype)
    s = 3.1 if np.dtype(dtype).kind == "f" else 7
    f = {"mul": lambda m, x: x * s, "add": lambda m, x: x + s, "div": lambda m, x: x / s,
         "lt": lambda m, x: x < s, "max": lambda m, x: m.maximum(x, s)}[op]
    r, got = f(np, a), f(xp, xp.asarray(a)).get()
    assert got.dtype == r.dtype
    np.testing.assert_array_equal(got, r)


@pytest.mark.parametrize("name", ["floor_divide", "fmod", "remainder", "add", "power"])
@pytest.mark.parametrize("a,b", [(0, 0), (2, -2), (-2, 2.0), (True, 2)])
def test_dtype_argument_with_python_scalars_only(name, a, b):
    # dtype= fixes the output of the loop (NumPy's signature=(None, None, dtype)), scalars included
    with np.errstate(all="ignore"):
        want = getattr(np, name)(a, b, dtype=np.float64)
    got = getattr(xp, name)(a, b, dtype=np.float64)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(xp.asnumpy(got), want)


def test_dtype_argument_checks_input_casting():
    a = xp.ones(3)
    with pytest.raises(TypeError, match="input 0 from dtype\\('float64'\\) to dtype\\('int32'\\)"):
        xp.add(a, a, dtype=np.int32)          # same_kind by default, as NumPy
    assert xp.add(a, a, dtype=np.int32, casting="unsafe").dtype == np.int32


@pytest.mark.parametrize("casting", ["no", "equiv", "safe", "same_kind", "unsafe"])
@pytest.mark.parametrize("in_dt,out_dt", [("int16", "int32"), ("float16", "uint32"), ("complex64", "int64"),
                                          ("float32", "float64"), ("int32", "int32")])
def test_casting_rules_on_inputs_and_out(casting, in_dt, out_dt):
    def run(mod):
        a = mod.ones((2, 3), dtype=in_dt)
        b = mod.ones((2, 3), dtype="int32")
        out = mod.zeros((2, 3), dtype=out_dt)
        return mod.add(a, b, out=out, casting=casting)
    import warnings
    with warnings.catch_warnings(record=True) as np_w:
        warnings.simplefilter("always")
        try:
            want = run(np)
        except TypeError:
            want = None
    with warnings.catch_warnings(record=True) as xp_w:
        warnings.simplefilter("always")
        if want is None:
            with pytest.raises(TypeError, match=f"casting rule '{casting}'"):
                run(xp)
            return
        got = run(xp)
    np.testing.assert_array_equal(xp.asnumpy(got), want)
    # complex -> real warns NumPy's ComplexWarning (not PyTorch's UserWarning), once
    assert [w.category for w in xp_w] == [w.category for w in np_w]


@pytest.mark.parametrize("name", ["power", "float_power"])
@pytest.mark.parametrize("a,b", [(0j, 0), (0j, 0.0), (0j, False), (0j, 2), (0j, -1), (0j, 1j), (1 + 1j, 0), (0j, 2.5)])
def test_complex_power_of_zero_like_numpy(name, a, b):
    with np.errstate(all="ignore"):
        want = getattr(np, name)(a, b)
    got = getattr(xp, name)(a, b)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(xp.asnumpy(got), want)
    arr = xp.asarray(np.array([0j, 1j, 2, 0j], dtype=np.complex64))
    exp = xp.asarray(np.array([0, 0, 2, -1], dtype=np.complex64))
    with np.errstate(all="ignore"):
        want = getattr(np, name)(xp.asnumpy(arr), xp.asnumpy(exp))
    np.testing.assert_array_equal(xp.asnumpy(getattr(xp, name)(arr, exp)), want)


@pytest.mark.parametrize("n", [4, 100_000])
def test_operands_not_broadcasting_is_value_error(n):
    # NumPy's error class and message (PyTorch raises RuntimeError)
    with pytest.raises(ValueError, match=rf"operands could not be broadcast together with shapes \({n},6\) \(3,6\)"):
        xp.ones((n, 6)) + xp.ones((3, 6))
    with pytest.raises(ValueError, match=r"shapes \(3,\) \(4,\)"):
        _ = xp.arange(3) == xp.arange(4)


@pytest.mark.parametrize("name, b", [("add", 1), ("subtract", 2.5), ("multiply", 3), ("maximum", 7), ("negative", None),
                                     ("bitwise_or", 6)])
@pytest.mark.parametrize("dtype", ["float32", "int64", "uint32", "int8"])
@pytest.mark.parametrize("layout", ["contiguous", "transposed"])
def test_ufunc_at_repeated_indices(name, b, dtype, layout):
    if name == "bitwise_or" and dtype == "float32" or name == "subtract" and dtype != "float32":
        pytest.skip("no NumPy loop for this pair")
    a = (np.arange(12) % 5).astype(dtype).reshape(3, 4)
    x = xp.asarray(a)
    if layout == "transposed":
        a, x = a.T, x.T
    idx = ([0, 0, 1, 2, 2, 2], [1, 1, 0, 2, 2, 0])
    operand = () if b is None else (b,)
    getattr(np, name).at(a, idx, *operand)
    getattr(xp, name).at(x, (xp.asarray(idx[0]), idx[1]), *operand)
    np.testing.assert_array_equal(xp.asnumpy(x), a)


def test_ufunc_at_errors():
    with pytest.raises(IndexError):
        xp.add.at(xp.zeros(3), [5], 1)
    with pytest.raises(TypeError, match="must be an xp.ndarray"):
        xp.add.at(np.zeros(3), [0], 1)
    x = xp.zeros((0, 2))
    xp.add.at(x, [], 1)
    assert x.shape == (0, 2)


@pytest.mark.parametrize("axis", [0, 1])
def test_ufunc_reduceat(axis):
    a = np.arange(24.0).reshape(4, 6)
    for name in ("add", "multiply", "maximum"):
        expected = getattr(np, name).reduceat(a, [0, 2, 1, 3], axis=axis)
        got = getattr(xp, name).reduceat(xp.asarray(a), xp.asarray([0, 2, 1, 3]), axis=axis)
        assert got.dtype == expected.dtype
        np.testing.assert_array_equal(xp.asnumpy(got), expected)
    out = xp.zeros(3, dtype=xp.int64)
    assert xp.add.reduceat(xp.arange(8), [0, 4, 6], out=out) is out
    np.testing.assert_array_equal(xp.asnumpy(out), [6, 9, 13])
    with pytest.raises(TypeError, match="same_kind"):
        xp.add.reduceat(xp.arange(8.0), [0, 4], out=xp.zeros(2, dtype=xp.int64))


@pytest.mark.parametrize("signature", [(None, None, np.float64), (np.float64, np.float64, None), "dd->d"])
def test_ufunc_signature_selects_the_loop(signature):
    a = np.arange(4, dtype=np.int32)
    expected = np.add(a, a, signature=signature)
    got = xp.add(xp.asarray(a), xp.asarray(a), signature=signature)
    assert got.dtype == expected.dtype
    np.testing.assert_array_equal(xp.asnumpy(got), expected)
    with pytest.raises(TypeError):       # NumPy's UFuncTypeError: float64 input into an int64 loop
        xp.add(xp.arange(4.0), 1, signature=(None, None, np.int64))
    with pytest.raises(TypeError, match="both"):
        xp.add(xp.arange(4.0), 1, signature=(None, None, np.int64), dtype=np.float64)


@pytest.mark.parametrize("order", ["F", "A", "C"])
@pytest.mark.parametrize("transposed", [False, True])
def test_ufunc_order(order, transposed):
    a = np.arange(12.0).reshape(3, 4)
    x = xp.asarray(a)
    if transposed:
        a, x = a.T, x.T
    expected = np.add(a, 1, order=order)
    got = xp.add(x, 1, order=order)
    assert (got.flags.f_contiguous, got.flags.c_contiguous) == (expected.flags.f_contiguous, expected.flags.c_contiguous)
    np.testing.assert_array_equal(xp.asnumpy(got), expected)


def test_ufunc_keyword_values_checked_as_numpy():
    with pytest.raises(ValueError, match="casting must be one of"):
        xp.add(xp.arange(3), 1, casting="bogus")
    with pytest.raises(ValueError, match="order must be one of"):
        xp.add(xp.arange(3), 1, order="X")
    with pytest.raises(TypeError, match="not supported for the input types"):
        xp.bitwise_and.reduce(xp.ones(3))
