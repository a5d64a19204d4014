"""Result dtypes equal NumPy 2's: every function below x every (pair of) numeric dtype(s), with
NumPy itself as the table (each function is one case; a failure lists every mismatching pair)."""
import warnings

import numpy as np
import pytest

import npudist.xp as xp

DTYPES = [np.dtype(d) for d in ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
                                "float16", "float32", "float64", "complex64", "complex128")]

BINARY_UFUNCS = ["add", "subtract", "multiply", "true_divide", "floor_divide", "remainder", "fmod", "power",
                 "maximum", "minimum", "fmax", "fmin", "arctan2", "hypot", "copysign", "nextafter", "logaddexp",
                 "heaviside", "gcd", "lcm", "bitwise_and", "bitwise_or", "bitwise_xor", "left_shift", "right_shift",
                 "logical_and", "logical_or", "logical_xor", "equal", "not_equal", "less", "less_equal", "greater",
                 "greater_equal", "float_power", "divmod"]
BINARY_FUNCS = {
    "concatenate": lambda m, a, b: m.concatenate([a, b]),
    "stack": lambda m, a, b: m.stack([a, b]),
    "where": lambda m, a, b: m.where(a > b if a.dtype.kind != "c" else a == b, a, b),
    "matmul": lambda m, a, b: m.matmul(a.reshape(1, 2), b.reshape(2, 1)),
    "dot": lambda m, a, b: m.dot(a, b),
    "append": lambda m, a, b: m.append(a, b),
    "vstack": lambda m, a, b: m.vstack([a, b]),
    "isclose": lambda m, a, b: m.isclose(a, b),
    "array_equal": lambda m, a, b: m.asarray(m.array_equal(a, b)),
    "convolve": lambda m, a, b: m.convolve(a, b),
    "interp": lambda m, a, b: m.interp(a, m.asarray([0, 1]), b),
    "outer": lambda m, a, b: m.outer(a, b),
    "inner": lambda m, a, b: m.inner(a, b),
    "cross": lambda m, a, b: m.cross(m.concatenate([a, a[:1]]), m.concatenate([b, b[:1]])),
    "kron": lambda m, a, b: m.kron(a, b),
    "select": lambda m, a, b: m.select([a != 0], [a], default=b),
    "choose": lambda m, a, b: m.choose(m.asarray([0, 1]), [a, b]),
    "setdiff1d": lambda m, a, b: m.setdiff1d(a, b),
    "union1d": lambda m, a, b: m.union1d(a, b),
    "intersect1d": lambda m, a, b: m.intersect1d(a, b),
    "mul_add": lambda m, a, b: a * b + a,
    "trapezoid": lambda m, a, b: m.asarray(m.trapezoid(a, b)),
    "correlate": lambda m, a, b: m.correlate(a, b, "full"),
}
UNARY_FUNCS = {
    "sum": lambda m, a: m.sum(a), "prod": lambda m, a: m.prod(a), "cumsum": lambda m, a: m.cumsum(a),
    "cumprod": lambda m, a: m.cumprod(a), "mean": lambda m, a: m.mean(a), "var": lambda m, a: m.var(a),
    "std": lambda m, a: m.std(a), "max": lambda m, a: m.max(a), "min": lambda m, a: m.min(a),
    "argmax": lambda m, a: m.argmax(a), "ptp": lambda m, a: m.ptp(a), "median": lambda m, a: m.median(a),
    "sort": lambda m, a: m.sort(a), "argsort": lambda m, a: m.argsort(a), "unique": lambda m, a: m.unique(a),
    "diff": lambda m, a: m.diff(a), "abs": lambda m, a: m.abs(a), "negative": lambda m, a: m.negative(a),
    "sqrt": lambda m, a: m.sqrt(a), "exp": lambda m, a: m.exp(a), "square": lambda m, a: m.square(a),
    "sign": lambda m, a: m.sign(a), "floor": lambda m, a: m.floor(a), "round": lambda m, a: m.round(a),
    "clip": lambda m, a: m.clip(a, a[0], a[1]), "nonzero": lambda m, a: m.nonzero(a)[0],
    "count_nonzero": lambda m, a: m.asarray(m.count_nonzero(a)), "real": lambda m, a: m.real(a),
    "imag": lambda m, a: m.imag(a), "conj": lambda m, a: m.conj(a), "angle": lambda m, a: m.angle(a),
    "isnan": lambda m, a: m.isnan(a), "nan_to_num": lambda m, a: m.nan_to_num(a), "average": lambda m, a: m.average(a),
    "quantile": lambda m, a: m.quantile(a, 0.5), "cov": lambda m, a: m.cov(a), "linspace": lambda m, a: m.linspace(a[0], a[1], 3),
    "zeros_like": lambda m, a: m.zeros_like(a), "full_like": lambda m, a: m.full_like(a, 1), "tile": lambda m, a: m.tile(a, 2),
    "gradient": lambda m, a: m.gradient(a), "trapezoid": lambda m, a: m.asarray(m.trapezoid(a)),
    "vander": lambda m, a: m.vander(a), "real_if_close": lambda m, a: m.real_if_close(a),
    "histogram": lambda m, a: m.histogram(a.real if a.dtype.kind == "c" else a, bins=2)[0],
    "bincount": lambda m, a: m.bincount(m.asarray([0, 1]), weights=a), "fft": lambda m, a: m.fft.fft(a),
    "rfft": lambda m, a: m.fft.rfft(a), "cumulative_sum": lambda m, a: m.cumulative_sum(a),
    "nansum": lambda m, a: m.nansum(a), "nanmean": lambda m, a: m.nanmean(a), "around": lambda m, a: m.around(a, 1),
    "fix": lambda m, a: m.fix(a), "sinc": lambda m, a: m.sinc(a), "unwrap": lambda m, a: m.unwrap(a),
}


# Documented differences (docs/xp.md), skipped by the table: (which cases, why).
KNOWN = {
    "round": (lambda lab: lab == "bool", "round of a bool array stays bool (NumPy: float16)"),
    "around": (lambda lab: lab == "bool", "round of a bool array stays bool (NumPy raises)"),
}
# costly functions get each dtype with itself and three partners instead of every pair
HEAVY = {"convolve", "correlate", "cross", "kron", "outer", "inner", "matmul", "dot", "setdiff1d", "union1d",
         "intersect1d", "interp", "trapezoid"}
PARTNERS = [np.dtype(d) for d in ("int64", "float32", "uint64")]


def _pairs(name, every_pair):
    if name in HEAVY or not every_pair:
        return [(a, b) for a in DTYPES for b in [a] + PARTNERS]
    return [(a, b) for a in DTYPES for b in DTYPES]


def _values(dt):
    return np.array([1, 2], dtype=dt)


def _result(f):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with np.errstate(all="ignore"):
                r = f()
    except Exception as e:   # noqa: BLE001 - the table records that NumPy raises
        return type(e).__mro__[1].__name__ if isinstance(e, (TypeError, ValueError)) else "error"
    rs = r if isinstance(r, tuple) else (r,)
    return tuple(np.asarray(x).dtype if not hasattr(x, "_t") else x.dtype for x in rs)


def _check(cases, name=None):
    bad = []
    skip = KNOWN.get(name, (lambda lab: False, ""))[0]
    for label, fn_np, fn_xp in cases:
        if skip(label):
            continue
        want = _result(fn_np)
        if want in ("error", "Exception"):
            continue
        got = _result(fn_xp)
        if isinstance(want, str):
            if not isinstance(got, str):
                bad.append(f"{label}: NumPy raises, xp gives {got}")
            continue
        if got != want:
            bad.append(f"{label}: xp {got}, NumPy {want}")
    assert not bad, f"{len(bad)} dtype mismatches:\n" + "\n".join(bad[:40])


# the default tier pairs each dtype with itself and three partners; --full runs every pair
EVERY = pytest.mark.parametrize("every_pair", [False, pytest.param(True, marks=pytest.mark.slow)],
                                ids=["sampled", "every_pair"])


@EVERY
@pytest.mark.parametrize("name", BINARY_UFUNCS)
def test_binary_ufunc_result_dtypes(name, every_pair):
    npf, xpf = getattr(np, name), getattr(xp, name)
    _check([(f"{a} x {b}", lambda a=a, b=b: npf(_values(a), _values(b)),
             lambda a=a, b=b: xpf(xp.asarray(_values(a)), xp.asarray(_values(b)))) for a, b in _pairs(name, every_pair)], name)


@EVERY
@pytest.mark.parametrize("name", list(BINARY_FUNCS))
def test_binary_function_result_dtypes(name, every_pair):
    f = BINARY_FUNCS[name]
    _check([(f"{a} x {b}", lambda a=a, b=b: f(np, _values(a), _values(b)),
             lambda a=a, b=b: f(xp, xp.asarray(_values(a)), xp.asarray(_values(b)))) for a, b in _pairs(name, every_pair)], name)


@pytest.mark.parametrize("name", list(UNARY_FUNCS))
def test_unary_function_result_dtypes(name):
    f = UNARY_FUNCS[name]
    _check([(str(a), lambda a=a: f(np, _values(a)), lambda a=a: f(xp, xp.asarray(_values(a)))) for a in DTYPES], name)


def test_python_scalar_operands_are_weak():
    for dt in DTYPES:
        for s in (1, 1.5, 1j, True):
            for name in ("add", "multiply", "maximum", "less"):
                _check([(f"{dt} {name} {s!r}", lambda: getattr(np, name)(_values(dt), s),
                         lambda: getattr(xp, name)(xp.asarray(_values(dt)), s))])
