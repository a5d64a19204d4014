"""Dtype functions, comparisons of whole arrays, and small NumPy helpers (matches numpy's)."""
import contextlib

import numpy as np
import torch

from ._core import OPS, is_f_contiguous, result_dtype, tensor_of, operand, result, wrap
from ._dtypes import NP_TO_TORCH, SUPPORTED_DTYPES, TORCH_TO_NP, to_dtype
from ._core import ndarray


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
    return _dtype_of(x).kind == "c" if not isinstance(x, (int, float, bool)) else isinstance(x, complex)


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


def round(a, decimals=0, out=None):
    """Round half to even to the given decimals (matches numpy.round)."""
    t = _t(a)
    if t.is_complex():
        r = torch.complex(torch.round(t.real, decimals=decimals), torch.round(t.imag, decimals=decimals))
    elif t.is_floating_point():
        r = torch.round(t, decimals=decimals) if decimals else torch.round(t)
    elif decimals >= 0:
        r = t.clone()
    else:
        f = 10 ** (-decimals)
        r = (torch.round(t.to(torch.float64) / f) * f).to(t.dtype)
    return result(r, out)


around = round


def fix(x, out=None):
    trunc = OPS["trunc"]
    return trunc(x, out=out)


def nan_to_num(x, copy=True, nan=0.0, posinf=None, neginf=None):
    """NaN -> nan, +-inf -> large finite numbers (matches numpy.nan_to_num)."""
    t = _t(x)
    if t.is_complex():
        r = torch.complex(torch.nan_to_num(t.real, nan, posinf, neginf), torch.nan_to_num(t.imag, nan, posinf, neginf))
    elif t.is_floating_point():
        r = torch.nan_to_num(t, nan, posinf, neginf)
    else:
        r = t.clone() if copy else t
    if not copy and isinstance(x, ndarray):
        x._t.copy_(r)
        return x
    return wrap(r)


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


def interp(x, xp, fp, left=None, right=None, period=None):
    """1-D linear interpolation (matches numpy.interp for real values, increasing xp)."""
    if period is not None:
        raise NotImplementedError("interp(period=...) is not supported")
    xt = _t(x).to(torch.float64)
    xpt = _t(xp).to(torch.float64)
    fpt = _t(fp)
    fpt = fpt.to(torch.complex128 if fpt.is_complex() else torch.float64)
    if xpt.ndim != 1 or fpt.ndim != 1 or xpt.numel() != fpt.numel():
        raise ValueError("fp and xp are not of the same length.")
    if xpt.numel() == 0:
        raise ValueError("array of sample points is empty")
    i = torch.searchsorted(xpt.contiguous(), xt.contiguous(), right=True).clamp(1, max(xpt.numel() - 1, 1))
    x0, x1 = xpt[i - 1], xpt[i] if xpt.numel() > 1 else xpt[i - 1]
    f0, f1 = fpt[i - 1], fpt[i] if xpt.numel() > 1 else fpt[i - 1]
    w = torch.where(x1 != x0, (xt - x0) / torch.where(x1 != x0, x1 - x0, 1.0), 0.0)
    r = f0 + (f1 - f0) * w
    r = torch.where(xt == xpt[-1], fpt[-1], r)
    lv = fpt[0] if left is None else torch.tensor(left, dtype=fpt.dtype, device=fpt.device)
    rv = fpt[-1] if right is None else torch.tensor(right, dtype=fpt.dtype, device=fpt.device)
    r = torch.where(xt < xpt[0], lv, r)
    r = torch.where(xt > xpt[-1], rv, r)
    return wrap(r)


def convolve(a, v, mode="full"):
    """Discrete linear convolution of 1-D arrays (matches numpy.convolve)."""
    at, vt = _t(a), _t(v)
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
