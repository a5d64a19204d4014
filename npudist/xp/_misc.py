"""Dtype functions, comparisons of whole arrays, and small NumPy helpers (matches numpy's)."""
import contextlib

import numpy as np
import torch

from ._core import OPS, is_f_contiguous, ndarray, operand, result, result_dtype, tensor_of, wrap
from ._core._math import around, round  # noqa: F401  (re-exported: ndarray.round's own function)
from ._dtypes import NP_TO_TORCH, SUPPORTED_DTYPES, TORCH_TO_NP, to_dtype

_t = tensor_of  # the package's one unwrapping helper


def _dtype_of(x):
    if isinstance(x, ndarray):
        return x.dtype
    if type(x) in (int, float, complex, bool):
        return x
    if isinstance(x, torch.Tensor):
        return TORCH_TO_NP[x.dtype]
    if isinstance(x, (np.ndarray, np.generic)):
        return x.dtype
    return to_dtype(x)


def result_type(*arrays_and_dtypes):
    """NumPy 2 result dtype (Python scalars are weak) (matches numpy.result_type)."""
    args = [_dtype_of(a) for a in arrays_and_dtypes]
    if args and all(type(a) in (int, float, complex, bool) for a in args):
        args = [np.asarray(a).dtype for a in args]
    return to_dtype(np.result_type(*args))


def can_cast(from_, to, casting="safe"):
    """Whether a cast is allowed (matches numpy.can_cast; from_ is a dtype or an array)."""
    src = _dtype_of(from_)
    if type(src) in (int, float, complex, bool):
        raise TypeError("can_cast() does not support Python ints, floats, and complex because the result used to "
                        "depend on the value.")
    return bool(np.can_cast(src, to_dtype(to), casting))


def common_type(*arrays):
    """The inexact scalar type common to the arrays (matches numpy.common_type: integers count as
    float64, float16/32/64 and complex keep their precision; no arrays -> float16; bool and other
    non-numeric arrays raise TypeError "can't get common type for non-numeric array"). Only the
    dtypes are read; nothing is copied."""
    return np.common_type(*[np.empty(0, a.dtype) if isinstance(a, ndarray) else a for a in arrays])


def min_scalar_type(a, /):
    """The smallest dtype holding a (matches numpy.min_scalar_type: a dtype's own for arrays of one
    or more dimensions, value-based for scalars and 0-d arrays, whose value is read on the host)."""
    if isinstance(a, ndarray):
        return a.dtype if a.ndim else np.min_scalar_type(a.get())
    return np.min_scalar_type(a)


mintypecode = np.mintypecode       # dtype characters only: NumPy's own
typename = np.typename


def promote_types(type1, type2):
    return to_dtype(np.promote_types(to_dtype(type1), to_dtype(type2)))


def finfo(dtype):
    """Machine limits of a float dtype (numpy.finfo)."""
    return np.finfo(_dtype_of(dtype) if isinstance(dtype, (ndarray, torch.Tensor)) else to_dtype(dtype))


def iinfo(dtype):
    """Machine limits of an integer dtype (numpy.iinfo)."""
    return np.iinfo(_dtype_of(dtype) if isinstance(dtype, (ndarray, torch.Tensor)) else to_dtype(dtype))


_KINDS = {
    "bool": lambda d: d.kind == "b",
    "signed integer": lambda d: d.kind == "i",
    "unsigned integer": lambda d: d.kind == "u",
    "integral": lambda d: d.kind in "iu",
    "real floating": lambda d: d.kind == "f",
    "complex floating": lambda d: d.kind == "c",
    "numeric": lambda d: d.kind in "iufc",
}


def isdtype(dtype, kind):
    """Array API isdtype: whether dtype is of a kind ('integral', 'real floating', a dtype, a tuple)."""
    dt = to_dtype(dtype) if not isinstance(dtype, np.dtype) else dtype
    if isinstance(kind, tuple):
        return any(isdtype(dt, k) for k in kind)
    if isinstance(kind, str):
        try:
            return _KINDS[kind](dt)
        except KeyError:
            raise ValueError(f"kind argument is a string, but {kind!r} is not a known kind name") from None
    try:
        return dt == to_dtype(kind)
    except TypeError:
        raise TypeError(f"kind must be a dtype, a kind name or a tuple of those, got {kind!r}") from None


issubdtype = np.issubdtype


def isscalar(element):
    return np.isscalar(element)


def iscomplexobj(x):
    """Whether x has a complex dtype, by its ``dtype`` attribute, else as ``numpy.asarray(x)``
    would hold it (lists, Python scalars) (matches numpy.iscomplexobj)."""
    if isinstance(x, (ndarray, torch.Tensor)):
        return _dtype_of(x).kind == "c"
    dt = getattr(x, "dtype", None)
    if dt is None:
        dt = np.asarray(x).dtype
    return np.dtype(dt).kind == "c"


def isrealobj(x):
    return not iscomplexobj(x)


def iscomplex(x):
    t = _t(x)
    return wrap(t.imag != 0 if t.is_complex() else torch.zeros(t.shape, dtype=torch.bool, device=t.device))


def isreal(x):
    return wrap(~iscomplex(x)._t)


def isclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    """|a - b| <= atol + rtol * |b| elementwise (matches numpy.isclose)."""
    oa, ob = operand(a), operand(b)
    dt = NP_TO_TORCH[to_dtype(np.result_type(result_dtype(oa, ob), np.float16))]
    dev = next((o.device for o in (oa, ob) if isinstance(o, torch.Tensor)), None)
    ta = oa.to(dt) if isinstance(oa, torch.Tensor) else torch.tensor(oa, dtype=dt, device=dev)
    tb = ob.to(dt) if isinstance(ob, torch.Tensor) else torch.tensor(ob, dtype=dt, device=dev)
    return wrap(torch.isclose(ta, tb, rtol=rtol, atol=atol, equal_nan=equal_nan))


def allclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    return bool(isclose(a, b, rtol, atol, equal_nan)._t.all())


def array_equal(a1, a2, equal_nan=False):
    """True if same shape and elements (matches numpy.array_equal)."""
    t1, t2 = _t(a1), _t(a2)
    if t1.shape != t2.shape:
        return False
    equal = OPS["equal"]
    eq = equal(wrap(t1), wrap(t2))._t
    if equal_nan and (t1.is_floating_point() or t1.is_complex()):
        eq = eq | (torch.isnan(t1) & torch.isnan(t2))
    return bool(eq.all())


def array_equiv(a1, a2):
    t1, t2 = _t(a1), _t(a2)
    try:
        torch.broadcast_shapes(t1.shape, t2.shape)
    except RuntimeError:
        return False
    equal = OPS["equal"]
    return bool(equal(wrap(t1), wrap(t2))._t.all())




def fix(x, out=None):
    trunc = OPS["trunc"]
    return trunc(x, out=out)


def nan_to_num(x, copy=True, nan=0.0, posinf=None, neginf=None):
    """NaN -> ``nan``, +inf -> ``posinf`` (default: the dtype's largest finite value), -inf ->
    ``neginf`` (default: the most negative), in the real and imaginary parts of inexact arrays;
    other dtypes come back as they are (matches numpy.nan_to_num). ``nan``/``posinf``/``neginf`` may
    be arrays broadcastable to ``x`` (ValueError otherwise) and cast with NumPy's same_kind rule
    (TypeError otherwise). ``copy=False`` replaces in place in ``x`` and returns it."""
    a = x if isinstance(x, ndarray) and not copy else wrap(_t(x).clone() if isinstance(x, ndarray) else _t(x))
    t = a._t
    if not (t.is_floating_point() or t.is_complex()):
        return a
    parts = (torch.real(t), torch.imag(t)) if t.is_complex() else (t,)
    info = torch.finfo(parts[0].dtype)
    fills = [(torch.isnan, nan), (torch.isposinf, info.max if posinf is None else posinf),
             (torch.isneginf, info.min if neginf is None else neginf)]
    for d in parts:
        masks = [test(d) for test, _ in fills]      # all three before any replacement, as NumPy's
        for m, (_, value) in zip(masks, fills):
            d.copy_(torch.where(m, _fill_value(value, d), d))
    return a


def _fill_value(value, d):
    """A nan_to_num replacement value as a tensor of d's dtype, checked as numpy.copyto checks it."""
    if isinstance(value, (int, float, bool)) and not isinstance(value, ndarray):
        return torch.tensor(value, dtype=torch.float64).to(device=d.device, dtype=d.dtype)
    v = _t(value)
    src = TORCH_TO_NP[v.dtype]
    if not np.can_cast(src, TORCH_TO_NP[d.dtype], "same_kind"):
        raise TypeError(f"Cannot cast array data from dtype('{src}') to dtype('{TORCH_TO_NP[d.dtype]}') according "
                        f"to the rule 'same_kind' (nan_to_num's nan/posinf/neginf)")
    try:
        shape = torch.broadcast_shapes(v.shape, d.shape)
    except RuntimeError:
        shape = None
    if shape != d.shape:
        raise ValueError(f"could not broadcast input array from shape {tuple(v.shape)} into shape {tuple(d.shape)} "
                         f"(nan_to_num's nan/posinf/neginf must broadcast to x)")
    return v.to(device=d.device, dtype=d.dtype)


def real(val):
    return asarray_(val).real


def imag(val):
    return asarray_(val).imag


def asarray_(x):
    return x if isinstance(x, ndarray) else wrap(_t(x))


def angle(z, deg=False):
    """Counterclockwise angle of complex values, arctan2(imag, real) (matches numpy.angle,
    result dtype included: arctan2's loop for the input)."""
    t = _t(z)
    arctan2 = OPS["arctan2"]
    a = arctan2(wrap(t.imag), wrap(t.real)) if t.is_complex() else arctan2(0, wrap(t))
    return a * (180 / np.pi) if deg else a


def sinc(x):
    t = _t(x)
    if not (t.is_floating_point() or t.is_complex()):
        t = t.to(torch.float64)
    return wrap(torch.sinc(t))


def i0(x):
    """Modified Bessel function of the first kind, order 0, elementwise (matches numpy.i0: float
    inputs keep their dtype, other real dtypes give float64, complex raises TypeError). Computed
    by PyTorch's i0 (float16 in float32, rounded once: within NumPy's own float16 rounding of its
    series, ~1e-3 relative, not bit-equal)."""
    t = _t(x)
    if t.is_complex():
        raise TypeError("i0 not supported for complex values")
    if not t.is_floating_point():
        t = t.to(torch.float64)
    if t.dtype in (torch.float16, torch.bfloat16):
        return wrap(torch.special.i0(t.to(torch.float32)).to(t.dtype))
    return wrap(torch.special.i0(t))


def interp(x, xp, fp, left=None, right=None, period=None):
    """1-D linear interpolation of (xp, fp) at x, xp increasing (matches numpy.interp, float64 or
    complex128 result). As NumPy's: x == xp[k] gives fp[k]; a NaN from one end of the interval
    (infinite fp) is retried from the other end; NaN x gives NaN; ``period`` wraps x and xp into
    [0, period) (left/right are then ignored; ValueError for period 0)."""
    xt = _t(x).to(torch.float64)
    xpt = _t(xp).to(torch.float64)
    fpt = _t(fp)
    fpt = fpt.to(torch.complex128 if fpt.is_complex() else torch.float64)
    if xpt.ndim != 1 or fpt.ndim != 1:
        raise ValueError("Data points must be 1-D sequences")
    if xpt.numel() != fpt.numel():
        raise ValueError("fp and xp are not of the same length.")
    if xpt.numel() == 0:
        raise ValueError("array of sample points is empty")
    if period is not None:
        if period == 0:
            raise ValueError("period must be a non-zero value")
        period = abs(period)
        left = right = None
        xt = torch.remainder(xt, period)
        xpt = torch.remainder(xpt, period)
        order = torch.argsort(xpt, stable=True)
        xpt, fpt = xpt[order], fpt[order]
        xpt = torch.cat([xpt[-1:] - period, xpt, xpt[:1] + period])
        fpt = torch.cat([fpt[-1:], fpt, fpt[:1]])
    n = xpt.numel()
    # xp[j] <= x < xp[j+1], trailing NaNs of xp (sorted NaN-last) above every x as in NumPy's search
    keys = torch.where(torch.isnan(xpt), torch.tensor(float("inf"), dtype=xpt.dtype, device=xpt.device), xpt)
    j = torch.searchsorted(keys.contiguous(), xt.contiguous(), right=True) - 1
    j0 = j.clamp(0, max(n - 2, 0))
    j1 = (j0 + 1).clamp(max=n - 1)
    x0, x1 = xpt[j0], xpt[j1]

    def part(f, lv, rv):
        f0, f1 = f[j0], f[j1]
        slope = (f1 - f0) / (x1 - x0)
        r = slope * (xt - x0) + f0
        r2 = slope * (xt - x1) + f1              # NaN from one end: the other end, then the flat value
        r2 = torch.where(torch.isnan(r2) & (f0 == f1), f0, r2)
        r = torch.where(torch.isnan(r), r2, r)
        r = torch.where(xt == x0, f0, r)
        r = torch.where(j == n - 1, f[-1], r)
        r = torch.where(j < 0, lv, r)
        r = torch.where(xt > xpt[-1], rv, r)
        return torch.where(torch.isnan(xt), xt, r)

    def end(v, default):
        return default if v is None else torch.tensor(v, dtype=fpt.dtype, device=fpt.device)

    lv, rv = end(left, fpt[0]), end(right, fpt[-1])
    if fpt.is_complex():
        r = torch.complex(part(fpt.real, lv.real, rv.real), part(fpt.imag, lv.imag, rv.imag))
    else:
        r = part(fpt, lv, rv)
    return wrap(r)


def convolve(a, v, mode="full"):
    """Discrete linear convolution of 1-D arrays (matches numpy.convolve)."""
    at, vt = _t(a), _t(v)
    if at.ndim > 1 or vt.ndim > 1:
        raise ValueError(f"object too deep for desired array: convolve takes 1-D arrays, got {at.ndim}-D and "
                         f"{vt.ndim}-D")
    if at.numel() == 0 or vt.numel() == 0:
        raise ValueError("a cannot be empty" if at.numel() == 0 else "v cannot be empty")
    dt = NP_TO_TORCH[to_dtype(np.result_type(TORCH_TO_NP[at.dtype], TORCH_TO_NP[vt.dtype]))]
    if vt.numel() > at.numel():
        at, vt = vt, at
    n, m = at.numel(), vt.numel()
    if dt.is_complex:   # (ar + i ai) * (vr + i vi) from four real convolutions
        real = torch.float32 if dt == torch.complex64 else torch.float64
        at, vt = at.to(dt), vt.to(dt)

        def conv(x, k):
            return torch.nn.functional.conv1d(x.to(real).reshape(1, 1, -1), k.to(real).flip(0).reshape(1, 1, -1),
                                              padding=m - 1).reshape(-1)
        full = torch.complex(conv(at.real, vt.real) - conv(at.imag, vt.imag),
                             conv(at.real, vt.imag) + conv(at.imag, vt.real))
        work = dt
    else:
        work = dt if dt in (torch.float32, torch.float64) else torch.float64
        x = at.to(work).reshape(1, 1, -1)
        k = vt.to(work).flip(0).reshape(1, 1, -1)
        full = torch.nn.functional.conv1d(x, k, padding=m - 1).reshape(-1)
    if mode == "full":
        r = full
    elif mode == "same":
        start = (m - 1) // 2
        r = full[start:start + n]
    elif mode == "valid":
        r = full[m - 1:n]
    else:
        raise ValueError(f"mode must be 'full', 'same' or 'valid', got {mode!r}")
    if dt != work:
        r = torch.round(r) if dt not in (torch.float16,) and not r.is_complex() else r
    return wrap(r.to(dt))


@contextlib.contextmanager
def errstate(**kwargs):
    """Accepted for NumPy compatibility; xp never warns on floating-point errors."""
    yield


def get_array_module(*args):
    """npudist.xp if any argument is an xp array, else numpy (as cupy.get_array_module)."""
    import sys
    return sys.modules["npudist.xp"] if any(isinstance(a, ndarray) for a in args) else np


def supported_dtypes():
    return SUPPORTED_DTYPES


def _inf_sign(x, out, negative):
    t = _t(x)
    if t.is_complex():
        raise TypeError("This operation is not supported for complex values because it would be ambiguous.")
    r = torch.isinf(t) & (torch.signbit(t) if negative else ~torch.signbit(t)) if t.is_floating_point() else \
        torch.zeros(t.shape, dtype=torch.bool, device=t.device)
    return result(r, out)


def isposinf(x, out=None):
    """True where x is +inf (matches numpy.isposinf; complex input raises TypeError)."""
    return _inf_sign(x, out, False)


def isneginf(x, out=None):
    """True where x is -inf (matches numpy.isneginf; complex input raises TypeError)."""
    return _inf_sign(x, out, True)


def isfortran(a):
    """True if a is Fortran-contiguous and not C-contiguous (matches numpy.isfortran)."""
    t = _t(a)
    return bool(is_f_contiguous(t) and not t.is_contiguous())
