"""PyTorch kernels of the ufuncs with NumPy's edge semantics, and the ufunc tables (name, kernel,
NumPy name, whether torch takes a Python scalar operand). Pure torch; no xp imports."""
import torch

_INT_TDT = {torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8, torch.uint16, torch.uint32, torch.uint64}


def _int_div_guard(fn, zero_value):
    def run(a, b):
        if not isinstance(b, torch.Tensor):
            if b == 0:
                return torch.full_like(a, zero_value) if isinstance(a, torch.Tensor) else a * 0
            return fn(a, b)
        if a.is_floating_point() or a.is_complex():
            return fn(a, b)
        zero = b == 0
        if bool(zero.any()):
            r = fn(a, torch.where(zero, torch.ones_like(b), b))
            return torch.where(zero, torch.zeros_like(r), r)
        return fn(a, b)
    return run


def _power(a, b):
    if isinstance(b, torch.Tensor):
        if b.dtype in _INT_TDT and bool((b < 0).any()):
            raise ValueError("Integers to negative integer powers are not allowed.")
    elif type(b) is int and b < 0 and a.dtype in _INT_TDT:
        raise ValueError("Integers to negative integer powers are not allowed.")
    return _complex_pow(a, b) if a.is_complex() else torch.pow(a, b)


def _complex_pow(a, b):
    """Complex power with NumPy's zero cases (npy_cpow): z**0 is 1+0j for every z (PyTorch: NaN for
    0**0); 0**b is 0 for a real positive b and nan+nanj otherwise (PyTorch: inf+nanj for b=-1)."""
    r = torch.pow(a, b)
    if not r.is_complex():
        return r
    dev, dt = r.device, r.dtype
    bt = (b if isinstance(b, torch.Tensor) else torch.tensor(b)).to(device=dev, dtype=dt)
    at = (a if isinstance(a, torch.Tensor) else torch.tensor(a)).to(device=dev, dtype=dt)
    zero_pow = torch.where((bt.real > 0) & (bt.imag == 0), torch.zeros((), dtype=dt, device=dev),
                           torch.full((), complex("nan+nanj"), dtype=dt, device=dev))
    r = torch.where(at == 0, zero_pow, r)
    return torch.where(bt == 0, torch.ones((), dtype=dt, device=dev), r)


def _float_power(a, b):
    return _complex_pow(a, b) if a.is_complex() else torch.pow(a, b)


def _cbrt(t):
    r = torch.pow(t.abs(), 1.0 / 3.0)
    r2 = torch.round(r)
    r = torch.where(r2 * r2 * r2 == t.abs(), r2, r)  # exact for perfect cubes, as NumPy's cbrt
    return torch.copysign(r, t)


def _rint(t):
    return torch.round(t) if not t.is_complex() else torch.complex(torch.round(t.real), torch.round(t.imag))


def _modf(t):
    ip = torch.trunc(t)
    fp = torch.where(torch.isinf(t), torch.zeros_like(t).copysign(t), t - ip)
    return fp, ip


def _divmod(a, b):
    return _floor_divide(a, b), _remainder(a, b)


def _heaviside(a, b):
    return torch.heaviside(a, b if isinstance(b, torch.Tensor) else torch.tensor(b, dtype=a.dtype, device=a.device))


def _ldexp(a, b):
    return torch.ldexp(a, b).to(a.dtype)


def _positive(t):
    return t.clone()


def _shift(fn, bits_fill):
    def run(a, b):
        nbits = a.element_size() * 8
        bt = b if isinstance(b, torch.Tensor) else torch.tensor(b, dtype=a.dtype, device=a.device)
        big = (bt >= nbits) | (bt < 0)
        if bool(big.any()):
            r = fn(a, torch.where(big, torch.zeros_like(bt), bt))
            fill = torch.zeros_like(r) if not bits_fill else torch.where(a < 0, -torch.ones_like(r), torch.zeros_like(r))
            return torch.where(big, fill, r)
        return fn(a, b)
    return run


def _copysign(a, b):
    return torch.copysign(a, b).to(a.dtype)


def _sign(t):
    if t.is_complex():
        return torch.sgn(t)
    if t.is_floating_point():
        return torch.where(torch.isnan(t), t, torch.sign(t))
    return torch.sign(t)


def _exp2(t):
    return torch.exp2(t)


def _spacing(t):
    inf = torch.full_like(t, float("inf"))
    return torch.nextafter(t.abs(), inf) - t.abs()


def _lex(op):
    """Comparison with NumPy's lexicographic order for complex numbers (real part, then imaginary)."""
    def run(a, b):
        if not (isinstance(a, torch.Tensor) and a.is_complex()):
            return op(a, b)
        if not isinstance(b, torch.Tensor):
            b = torch.tensor(b, dtype=a.dtype, device=a.device)
        ar, ai, br, bi = a.real, a.imag, b.real, b.imag
        return op(ar, br) | ((ar == br) & op(ai, bi)) if op in (torch.lt, torch.gt) else \
            op(ar, br) & ((ar != br) | op(ai, bi))
    return run


def _complex_extreme(op, nan_wins):
    def run(a, b):
        if not a.is_complex():
            return op(a, b)
        first = _lex(torch.gt if op in (torch.maximum, torch.fmax) else torch.lt)(a, b)
        na, nb = torch.isnan(a), torch.isnan(b)
        if nan_wins:
            pick_a = first | na | (~nb & (a == b))
        else:
            pick_a = (first & ~na) | nb | (a == b)
        return torch.where(pick_a, a, b)
    return run


_floor_divide = _int_div_guard(torch.floor_divide, 0)
def _float_remainder(a, b):
    r = torch.remainder(a, b)
    if r.is_floating_point():  # NumPy: a zero remainder takes the divisor's sign
        bt = b if isinstance(b, torch.Tensor) else torch.tensor(b, dtype=r.dtype, device=r.device)
        r = torch.where(r == 0, torch.zeros_like(r).copysign(bt), r)
    return r


_remainder = _int_div_guard(_float_remainder, 0)
_fmod = _int_div_guard(torch.fmod, 0)

_POPCOUNT = [bin(i).count("1") for i in range(256)]


def _bitwise_count(t):
    """Set bits of |t| (NumPy's bitwise_count), byte by byte through a 256-entry table."""
    if t.dtype == torch.bool:
        return t.to(torch.uint8)
    v = t.abs() if t.dtype in (torch.int8, torch.int16, torch.int32, torch.int64) else t
    size = v.element_size()
    v = v.as_subclass(torch.Tensor).view(torch.int64) if size == 8 else v.as_subclass(torch.Tensor).to(torch.int64)
    table = torch.tensor(_POPCOUNT, dtype=torch.uint8, device=t.device)
    r = torch.zeros(v.shape, dtype=torch.uint8, device=t.device)
    for k in range(size):
        r += table[(v >> (8 * k)) & 255]
    return r


_U = [  # name, kernel, numpy name
    ("negative", torch.neg, None), ("positive", _positive, None), ("absolute", torch.abs, None),
    ("fabs", torch.abs, None), ("sign", _sign, None), ("sqrt", torch.sqrt, None), ("cbrt", _cbrt, None),
    ("square", torch.square, None), ("reciprocal", torch.reciprocal, None), ("exp", torch.exp, None),
    ("exp2", _exp2, None), ("expm1", torch.expm1, None), ("log", torch.log, None), ("log2", torch.log2, None),
    ("log10", torch.log10, None), ("log1p", torch.log1p, None), ("sin", torch.sin, None),
    ("cos", torch.cos, None), ("tan", torch.tan, None), ("arcsin", torch.asin, None),
    ("arccos", torch.acos, None), ("arctan", torch.atan, None), ("sinh", torch.sinh, None),
    ("cosh", torch.cosh, None), ("tanh", torch.tanh, None), ("arcsinh", torch.asinh, None),
    ("arccosh", torch.acosh, None), ("arctanh", torch.atanh, None), ("deg2rad", torch.deg2rad, None),
    ("rad2deg", torch.rad2deg, None), ("degrees", torch.rad2deg, None), ("radians", torch.deg2rad, None),
    ("floor", torch.floor, None), ("ceil", torch.ceil, None), ("trunc", torch.trunc, None),
    ("rint", _rint, None), ("isnan", torch.isnan, None), ("isinf", torch.isinf, None),
    ("isfinite", torch.isfinite, None), ("signbit", torch.signbit, None), ("logical_not", torch.logical_not, None),
    ("invert", torch.bitwise_not, None), ("conjugate", torch.conj_physical, None), ("spacing", _spacing, None),
    ("bitwise_count", _bitwise_count, None),
]
_B = [  # name, kernel, numpy name, torch accepts a Python scalar second operand
    ("add", torch.add, None, True), ("subtract", torch.sub, None, True), ("multiply", torch.mul, None, True),
    ("true_divide", torch.true_divide, "divide", True), ("floor_divide", _floor_divide, None, True),
    ("remainder", _remainder, None, True), ("fmod", _fmod, None, True), ("power", _power, None, True),
    ("float_power", _float_power, None, True), ("maximum", _complex_extreme(torch.maximum, True), None, False),
    ("minimum", _complex_extreme(torch.minimum, True), None, False),
    ("fmax", _complex_extreme(torch.fmax, False), None, False), ("fmin", _complex_extreme(torch.fmin, False), None, False),
    ("arctan2", torch.atan2, None, False), ("hypot", torch.hypot, None, False), ("copysign", _copysign, None, False),
    ("nextafter", torch.nextafter, None, False), ("logaddexp", torch.logaddexp, None, False),
    ("logaddexp2", torch.logaddexp2, None, False), ("heaviside", _heaviside, None, False),
    ("gcd", torch.gcd, None, False), ("lcm", torch.lcm, None, False), ("ldexp", _ldexp, None, False),
    ("bitwise_and", torch.bitwise_and, None, True), ("bitwise_or", torch.bitwise_or, None, True),
    ("bitwise_xor", torch.bitwise_xor, None, True),
    ("left_shift", _shift(torch.bitwise_left_shift, False), None, False),
    ("right_shift", _shift(torch.bitwise_right_shift, True), None, False),
    ("logical_and", torch.logical_and, None, False), ("logical_or", torch.logical_or, None, False),
    ("logical_xor", torch.logical_xor, None, False), ("equal", torch.eq, None, True),
    ("not_equal", torch.ne, None, True), ("less", _lex(torch.lt), None, True),
    ("less_equal", _lex(torch.le), None, True), ("greater", _lex(torch.gt), None, True),
    ("greater_equal", _lex(torch.ge), None, True),
]

# NumPy's aliases (NumPy 2 has the Array API names in its main namespace too).
ALIASES = {
    "abs": "absolute", "conj": "conjugate", "divide": "true_divide", "mod": "remainder",
    "bitwise_not": "invert", "bitwise_invert": "invert", "bitwise_left_shift": "left_shift",
    "bitwise_right_shift": "right_shift", "pow": "power", "acos": "arccos", "asin": "arcsin",
    "atan": "arctan", "acosh": "arccosh", "asinh": "arcsinh", "atanh": "arctanh", "atan2": "arctan2",
    "round_": "rint",
}
