"""Public ufuncs of npudist.xp: the core engine (npudist.xp._ufunc) plus NumPy's reduce,
accumulate and outer methods, one object per NumPy ufunc and alias."""
import torch

from . import _reductions as _r
from ._core import ndarray, wrap
from ._convert import as_tensor
from ._ufunc import ufunc as _engine
from ._ufunc_kernels import ALIASES, _B, _U, _divmod, _modf


class ufunc(_engine):
    """An elementwise function with NumPy's ufunc interface (matches numpy.ufunc).

    ``f(x1[, x2], /, out=None, *, where=True, casting='same_kind', dtype=None)``; inputs broadcast
    (NumPy's rules); result dtype is NumPy 2's; TypeError where NumPy has no loop for the dtypes."""

    # ---- methods ---------------------------------------------------------------------------------
    def reduce(self, array, axis=0, dtype=None, out=None, keepdims=False, initial=None, where=True):
        """Reduction along axis (matches numpy.ufunc.reduce) for add, multiply, maximum, minimum,
        logical_and, logical_or, bitwise_and/or/xor, fmax, fmin."""
        r = _r
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
        r = _r
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
        a, b = wrap(as_tensor(a)), wrap(as_tensor(b))
        return self(a.reshape(a.shape + (1,) * b.ndim), b, **kwargs)




UFUNCS = {}
for _name, _fn, _npn in _U:
    UFUNCS[_name] = ufunc(_name, _fn, 1, np_name=_npn, array_type=ndarray)
for _name, _fn, _npn, _sok in _B:
    UFUNCS[_name] = ufunc(_name, _fn, 2, scalar_ok=_sok, np_name=_npn, array_type=ndarray)
UFUNCS["modf"] = ufunc("modf", _modf, 1, nout=2, array_type=ndarray)
UFUNCS["frexp"] = ufunc("frexp", torch.frexp, 1, nout=2, array_type=ndarray)
UFUNCS["divmod"] = ufunc("divmod", _divmod, 2, nout=2, array_type=ndarray)
for _alias, _target in ALIASES.items():
    UFUNCS[_alias] = UFUNCS[_target]
globals().update(UFUNCS)
