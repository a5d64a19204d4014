"""xp's ufuncs: the engine (npudist.xp._ufunc) plus NumPy's reduce, accumulate, outer, at and
reduceat methods, and the one table of them (``build_table``: one object per NumPy ufunc and
alias, each with its own C loop cache). ndarray's operators, the core's routines and the public
``xp.add`` etc. (npudist.xp._ufuncs re-exports them) are these objects. reduce and accumulate run
the core's reductions (npudist.xp._core._reductions), as NumPy's ``np.sum`` is ``np.add.reduce``."""
import numpy as np
import torch

from .. import _host
from .._convert import as_tensor
from .._ufunc import ufunc as _engine
from .._ufunc_kernels import _B, _U, ALIASES, _divmod, _modf
from . import _array
from . import _reductions as _r
from ._array import wrap


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

    def at(self, a, indices, b=None, /):
        """Unbuffered in place ``a[indices] = f(a[indices], b)``: an index repeated k times applies
        f k times (matches numpy.ufunc.at / cupy's ``add.at``). Runs NumPy's own ``ufunc.at`` on a
        zero-copy view of a's npu memory (on the host driver npu memory is host memory), after the
        current stream's pending work, so every ufunc, dtype and casting rule is NumPy's; a
        non-contiguous ``a`` goes through a contiguous copy that is written back. Errors: TypeError
        when ``a`` is not an xp array (and NumPy's own errors: IndexError, casting TypeError);
        RuntimeError during an npu graph capture (the host loop cannot be recorded)."""
        if not isinstance(a, _array.ARRAY):
            raise TypeError(f"xp.{self.__name__}.at: the first operand must be an xp.ndarray (it is written in "
                            f"place), got {type(a).__name__}")
        if _host.capturing():
            raise RuntimeError(f"xp.{self.__name__}.at cannot be captured in an npu graph; call it outside the capture")
        idx = _on_host(indices)
        operand = () if b is None else (_on_host(b),)
        work = a
        h = _host.host_view(a, a._t) if a.size else None
        if h is None and a.size:
            work = a.copy()
            h = _host.host_view(work, work._t)
        if h is None:   # no elements: NumPy still checks the indices and operands
            self._np.at(np.empty(a.shape, a.dtype), idx, *operand)
            return
        _host.wait(h[4])
        self._np.at(h[2], idx, *operand)
        if work is not a:
            a[...] = work

    def reduceat(self, array, indices, axis=0, dtype=None, out=None):
        """Reductions over the slices ``[indices[i], indices[i+1])`` along ``axis`` (matches
        numpy.ufunc.reduceat, where ``indices[i] >= indices[i+1]`` gives ``array[indices[i]]``).
        NumPy's own reduceat runs on the array's values; the result is a new npu array (or is
        written into ``out``, NumPy's same_kind casting: TypeError otherwise). Errors are NumPy's
        (IndexError for an index out of range, TypeError for ufuncs without reduceat)."""
        r = self._np.reduceat(_on_host(array), _on_host(indices), axis=axis, dtype=dtype)
        res = wrap(as_tensor(r))
        if out is None:
            return res
        if isinstance(out, tuple):
            (out,) = out
        if not isinstance(out, _array.ARRAY):
            raise TypeError(f"out must be an xp.ndarray, got {type(out).__name__}")
        if tuple(out.shape) != tuple(res.shape):
            raise ValueError(f"out has shape {tuple(out.shape)}; reduceat's result has {tuple(res.shape)}")
        if not np.can_cast(res.dtype, out.dtype, "same_kind"):
            raise TypeError(f"Cannot cast ufunc '{self.__name__}' output from {res.dtype!r} to {out.dtype!r} with "
                            f"casting rule 'same_kind'")
        out[...] = res
        return out


def _on_host(x):
    """NumPy values of an operand of ufunc.at/reduceat: xp arrays copied to the host (after their
    stream's work), tuples and lists converted item by item, anything else as it is."""
    if isinstance(x, _array.ARRAY):
        return x.get()
    if isinstance(x, (tuple, list)):
        return type(x)(_on_host(v) for v in x)
    return x


def build_table(table):
    """Fills ``table`` (a dict: npudist.xp._core._array.OPS) with one ufunc per NumPy ufunc and
    alias. They are made before xp.ndarray (its class body holds operators over them) and get the
    class, which their C fast path reads, from ``_array.register`` (ufunc.bind_array_type)."""
    for name, fn, npn in _U:
        table[name] = ufunc(name, fn, 1, np_name=npn)
    for name, fn, npn, sok in _B:
        table[name] = ufunc(name, fn, 2, scalar_ok=sok, np_name=npn)
    table["modf"] = ufunc("modf", _modf, 1, nout=2)
    table["frexp"] = ufunc("frexp", torch.frexp, 1, nout=2)
    table["divmod"] = ufunc("divmod", _divmod, 2, nout=2)
    for alias, target in ALIASES.items():
        table[alias] = table[target]


build_table(_array.OPS)
