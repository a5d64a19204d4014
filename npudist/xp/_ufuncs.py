"""Universal functions: NumPy's elementwise functions with out=, where=, dtype=, casting=, and
reduce / accumulate / outer for the common ones.

Dtype resolution is NumPy's own: each call asks ``numpy.<ufunc>.resolve_dtypes`` (cached per
dtype combination) which loop NumPy would run, with Python scalars as weak types (NumPy 2 / NEP 50
promotion), casts the operands to that loop, and runs the PyTorch kernel on the npu tensors.
Loops PyTorch has no kernel for (some float16 / small-integer ones) run in the next wider dtype
and are cast back, which is what NumPy's own float16 loops do. float64 work follows the float64
mode (npudist.xp._config).
"""
import numpy as np
import torch

from . import _config
from ._core import check_same_kind, operand, wrap
from ._ndarray import ndarray as _nd
from ._unsigned import UINT, UIntTensor, as_uint
from ._dtypes import DEMOTE_TORCH, NP_TO_TORCH, TORCH_TO_NP, to_dtype

_state = _config.state
_INT_TDT = {torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8, torch.uint16, torch.uint32, torch.uint64}
_UPCAST = {torch.float16: torch.float32, torch.int8: torch.int64, torch.int16: torch.int64,
           torch.int32: torch.int64, torch.uint8: torch.int64, torch.bool: torch.uint8}
_PY_TYPES = (int, float, complex, bool)
_BOOL = np.dtype(bool)
_COMPARISONS = {"equal", "not_equal", "less", "less_equal", "greater", "greater_equal"}


def _key_type(x):
    if isinstance(x, torch.Tensor):
        return TORCH_TO_NP[x.dtype]
    tp = type(x)
    return _BOOL if tp is bool else tp


class ufunc:
    """An elementwise function with NumPy's ufunc interface (matches numpy.ufunc).

    ``f(x1[, x2], /, out=None, *, where=True, casting='same_kind', dtype=None)``; inputs broadcast
    (NumPy's rules); result dtype is NumPy 2's; TypeError where NumPy has no loop for the dtypes."""

    def __init__(self, name, fn, nin, nout=1, scalar_ok=False, np_name=None, doc=None):
        self.__name__ = name
        self._np = getattr(np, np_name or name)
        self._fn = fn
        self.nin = nin
        self.nout = nout
        self.nargs = nin + nout
        self._scalar_ok = scalar_ok
        self._cache = {}
        self.identity = self._np.identity
        self.__doc__ = doc or f"Elementwise {name} on the npu (matches numpy.{np_name or name})."

    def __repr__(self):
        return f"<xp.ufunc '{self.__name__}'>"

    def _resolve(self, key_types, dtype):
        key = (key_types, dtype)
        try:
            return self._cache[key]
        except KeyError:
            pass
        types = tuple(TORCH_TO_NP[k] if isinstance(k, torch.dtype) else (_BOOL if k is bool else k) for k in key_types)
        try:
            if dtype is not None:
                loop = self._np.resolve_dtypes(tuple(dtype if not isinstance(t, type) else t for t in types) + (None,) * self.nout,
                                               casting="unsafe")
            else:
                loop = self._np.resolve_dtypes(types + (None,) * self.nout)
        except TypeError as e:
            names = ", ".join(getattr(t, "name", getattr(t, "__name__", str(t))) for t in types)
            raise TypeError(f"xp.{self.__name__} is not defined for dtypes ({names}): {e}") from None
        for d in loop:
            if d not in NP_TO_TORCH:
                to_dtype(d)  # raises UnsupportedDTypeError
        loop = tuple(NP_TO_TORCH[d] for d in loop)
        self._cache[key] = loop
        return loop

    def __call__(self, *args, out=None, where=True, casting="same_kind", dtype=None, order="K", subok=True,
                 signature=None):
        nin = self.nin
        if len(args) != nin:
            if len(args) > nin and out is None:
                out = args[nin:] if len(args) - nin > 1 else args[nin]
                args = args[:nin]
            else:
                raise TypeError(f"xp.{self.__name__} takes {nin} positional argument(s) but {len(args)} were given")
        ops = []
        key = []
        device = None
        for a in args:
            tp = type(a)
            if tp is _nd:
                t = a._t
                ops.append(t)
                key.append(t.dtype)
                device = t.device
            elif tp in _PY_TYPES:
                ops.append(a)
                key.append(tp)
            else:
                o = operand(a)
                ops.append(o)
                if isinstance(o, torch.Tensor):
                    key.append(o.dtype)
                    device = o.device
                else:
                    key.append(type(o))
        if dtype is not None:
            dtype = to_dtype(dtype)
        loop = self._resolve(tuple(key), dtype)
        if device is None:
            device = _config.device()
        conv = []
        for i, o in enumerate(ops):
            tdt = loop[i]
            if isinstance(o, torch.Tensor):
                conv.append(o if o.dtype == tdt else o.to(tdt))
            else:
                if type(o) is int and tdt in _INT_TDT:
                    info = torch.iinfo(tdt)
                    if not info.min <= o <= info.max:
                        if self.__name__ in _COMPARISONS:
                            wide = torch.int64 if -2**63 <= o < 2**63 else torch.float64
                            conv = [c.to(wide) for c in conv]
                            conv.extend(x.to(wide) if isinstance(x, torch.Tensor) else
                                        torch.tensor(x, dtype=wide, device=device) for x in ops[i:])
                            break
                        raise OverflowError(f"Python integer {o} out of bounds for {TORCH_TO_NP[tdt]}")
                if self._scalar_ok and i == 1:
                    conv.append(o)
                else:
                    conv.append(torch.tensor(o, dtype=tdt, device=device))
        out_tdts = loop[nin:]
        if _state.float64_mode == "off":
            try:
                res = self._fn(*conv)
            except (RuntimeError, NotImplementedError) as e:
                res = self._retry(conv, e)
            res = _cast_back(res, out_tdts)
        else:
            res = self._compute(conv, out_tdts)
        if self.nout == 1:
            if out is None and where is True:
                r = object.__new__(_nd)
                r._t = res
                return r
            return _finish(res, out, where, casting, TORCH_TO_NP[out_tdts[0]])
        if out is None:
            out = (None,) * self.nout
        return tuple(_finish(r, o, where, casting, TORCH_TO_NP[d]) for r, o, d in zip(res, out, out_tdts))

    def _compute(self, conv, out_tdts):
        mode = _state.float64_mode
        if mode != "off" and any(isinstance(c, torch.Tensor) and c.dtype in DEMOTE_TORCH for c in conv):
            if mode == "float32":
                conv = [c.to(DEMOTE_TORCH[c.dtype]) if isinstance(c, torch.Tensor) and c.dtype in DEMOTE_TORCH else c
                        for c in conv]
                return _cast_back(self._run(conv), out_tdts)
            dev = next(c.device for c in conv if isinstance(c, torch.Tensor))
            res = self._run([c.cpu() if isinstance(c, torch.Tensor) else c for c in conv])
            res = tuple(r.to(dev) for r in res) if isinstance(res, tuple) else res.to(dev)
            return _cast_back(res, out_tdts)
        return _cast_back(self._run(conv), out_tdts)

    def _run(self, conv):
        try:
            return self._fn(*conv)
        except (RuntimeError, NotImplementedError) as e:
            return self._retry(conv, e)

    def _retry(self, conv, e):
        if True:
            msg = str(e)
            if "not implemented for" not in msg and "not supported for" not in msg:
                raise
            if any(isinstance(c, torch.Tensor) and c.dtype in UINT and type(c) is not UIntTensor for c in conv):
                return self._fn(*[as_uint(c) if isinstance(c, torch.Tensor) else c for c in conv])
            up = [c.to(_UPCAST[c.dtype]) if isinstance(c, torch.Tensor) and c.dtype in _UPCAST else c for c in conv]
            if all(u is c for u, c in zip(up, conv)):
                raise TypeError(f"xp.{self.__name__}: PyTorch has no kernel for these dtypes: {msg}") from None
            return self._fn(*up)

    # ---- methods ---------------------------------------------------------------------------------
    def reduce(self, array, axis=0, dtype=None, out=None, keepdims=False, initial=None, where=True):
        """Reduction along axis (matches numpy.ufunc.reduce) for add, multiply, maximum, minimum,
        logical_and, logical_or, bitwise_and/or/xor, fmax, fmin."""
        from . import _reductions as r
        name = self.__name__
        if name in ("add", "multiply"):
            fn = r.sum if name == "add" else r.prod
            return fn(array, axis=axis, dtype=dtype, out=out, keepdims=keepdims,
                      initial=0 if initial is None and name == "add" else (1 if initial is None else initial),
                      where=where)
        if name in ("maximum", "minimum", "fmax", "fmin"):
            fn = r.amax if name in ("maximum", "fmax") else r.amin
            if name in ("fmax", "fmin"):
                fn = r.nanmax if name == "fmax" else r.nanmin
            return fn(array, axis=axis, out=out, keepdims=keepdims, initial=initial, where=where)
        if name in ("logical_and", "logical_or"):
            fn = r.all if name == "logical_and" else r.any
            return fn(array, axis=axis, out=out, keepdims=keepdims, where=where)
        if name in ("bitwise_and", "bitwise_or", "bitwise_xor"):
            return r.bitwise_reduce(self, array, axis=axis, dtype=dtype, out=out, keepdims=keepdims)
        raise NotImplementedError(f"xp.{name}.reduce is not supported; reductions exist for add, multiply, "
                                  f"maximum, minimum, fmax, fmin, logical_and, logical_or and bitwise_and/or/xor")

    def accumulate(self, array, axis=0, dtype=None, out=None):
        """Running reduction along axis (matches numpy.ufunc.accumulate) for add, multiply, maximum,
        minimum, logical_and, logical_or."""
        from . import _reductions as r
        name = self.__name__
        if name == "add":
            return r.cumsum(array, axis=axis, dtype=dtype, out=out)
        if name == "multiply":
            return r.cumprod(array, axis=axis, dtype=dtype, out=out)
        if name in ("maximum", "minimum", "logical_and", "logical_or"):
            return r.cum_extreme(name, array, axis=axis, dtype=dtype, out=out)
        raise NotImplementedError(f"xp.{name}.accumulate is not supported; it exists for add, multiply, maximum, "
                                  f"minimum, logical_and and logical_or")

    def outer(self, a, b, **kwargs):
        """f(a[..., None, ...], b): every pair (matches numpy.ufunc.outer)."""
        from ._creation import asarray
        a, b = asarray(a), asarray(b)
        return self(a.reshape(a.shape + (1,) * b.ndim), b, **kwargs)


def _cast_back(res, out_tdts):
    if isinstance(res, tuple):
        return tuple(r if r.dtype == d else r.to(d) for r, d in zip(res, out_tdts))
    d = out_tdts[0]
    return res if res.dtype == d else res.to(d)


def _finish(res, out, where, casting, res_dtype):
    from ._ndarray import ndarray
    if out is not None and isinstance(out, tuple):
        if len(out) != 1:
            raise ValueError(f"out must be a tuple of 1 array for this ufunc, got {len(out)}")
        out = out[0]
    if where is True:
        if out is None:
            return wrap(res)
        if not isinstance(out, ndarray):
            raise TypeError(f"out must be an xp.ndarray, got {type(out).__name__}")
        if casting != "unsafe":
            check_same_kind(res_dtype, out.dtype) if casting == "same_kind" else None
        ot = out._t
        if tuple(res.shape) != tuple(ot.shape):
            try:
                res = res.broadcast_to(ot.shape)
            except RuntimeError:
                raise ValueError(f"non-broadcastable output operand with shape {tuple(ot.shape)} doesn't match "
                                 f"the broadcast shape {tuple(res.shape)}") from None
        ot.copy_(res)
        return out
    from ._core import as_tensor
    mask = as_tensor(where)
    if mask.dtype != torch.bool:
        raise TypeError("where= must be a boolean array")
    if out is None:
        shape = torch.broadcast_shapes(res.shape, mask.shape)
        base = torch.zeros(shape, dtype=res.dtype, device=res.device)
        return wrap(torch.where(mask, res, base))
    if casting == "same_kind":
        check_same_kind(res_dtype, out.dtype)
    ot = out._t
    ot.copy_(torch.where(mask, res.to(ot.dtype), ot))
    return out


# ---- kernels with NumPy edge semantics ---------------------------------------------------------
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
    return torch.pow(a, b)


def _float_bool_sign(t):
    return torch.sgn(t) if t.is_complex() else torch.sign(t)


def _cbrt(t):
    r = torch.pow(t.abs(), 1.0 / 3.0)
    r2 = torch.round(r)
    r = torch.where(r2 * r2 * r2 == t.abs(), r2, r)  # exact for perfect cubes, as NumPy's cbrt
    return torch.copysign(r, t)


def _logical(fn):
    return lambda a, b: fn(a, b)


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
]
_B = [  # name, kernel, numpy name, torch accepts a Python scalar second operand
    ("add", torch.add, None, True), ("subtract", torch.sub, None, True), ("multiply", torch.mul, None, True),
    ("true_divide", torch.true_divide, "divide", True), ("floor_divide", _floor_divide, None, True),
    ("remainder", _remainder, None, True), ("fmod", _fmod, None, True), ("power", _power, None, True),
    ("float_power", torch.pow, None, True), ("maximum", _complex_extreme(torch.maximum, True), None, False),
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

UFUNCS = {}
for _name, _fn, _npn in _U:
    UFUNCS[_name] = ufunc(_name, _fn, 1, np_name=_npn)
for _name, _fn, _npn, _sok in _B:
    UFUNCS[_name] = ufunc(_name, _fn, 2, scalar_ok=_sok, np_name=_npn)
UFUNCS["modf"] = ufunc("modf", _modf, 1, nout=2)
UFUNCS["frexp"] = ufunc("frexp", torch.frexp, 1, nout=2)
UFUNCS["divmod"] = ufunc("divmod", _divmod, 2, nout=2)

# NumPy's aliases (NumPy 2 has the Array API names in its main namespace too).
ALIASES = {
    "abs": "absolute", "conj": "conjugate", "divide": "true_divide", "mod": "remainder",
    "bitwise_not": "invert", "bitwise_invert": "invert", "bitwise_left_shift": "left_shift",
    "bitwise_right_shift": "right_shift", "pow": "power", "acos": "arccos", "asin": "arcsin",
    "atan": "arctan", "acosh": "arccosh", "asinh": "arcsinh", "atanh": "arctanh", "atan2": "arctan2",
    "round_": "rint",
}
for _alias, _target in ALIASES.items():
    UFUNCS[_alias] = UFUNCS[_target]
globals().update(UFUNCS)
