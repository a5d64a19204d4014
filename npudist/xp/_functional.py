"""Functional programming routines (matches numpy.piecewise and numpy.vectorize; CuPy has them in
cupy/_functional)."""
import collections.abc

import numpy as np

from ._core import ndarray
from ._creation import asanyarray, asarray, zeros_like
from ._manipulation import concatenate
from ._reductions import any as _any

__all__ = ["piecewise", "vectorize"]


def piecewise(x, condlist, funclist, *args, **kw):
    """x evaluated piecewise (matches numpy.piecewise): where ``condlist[i]`` holds, the result is
    ``funclist[i]`` (a value, or a callable applied to ``x[condlist[i]]`` with ``*args, **kw``); with
    one more function than conditions the last one applies where no condition holds; elsewhere 0.
    Later conditions win where several hold. The result has x's shape and dtype (values are cast
    as NumPy's item assignment casts them). A single condition (a bool, or an array when x is not
    0-d) counts as a list of one. Raises ValueError naming both counts when len(funclist) is
    neither len(condlist) nor len(condlist) + 1. Runs on the npu (masked assignments); callables
    get xp arrays. CuPy raises NotImplementedError for callables; xp follows NumPy."""
    x = asanyarray(x)
    n2 = len(funclist)
    if np.isscalar(condlist) or (not _is_array(condlist[0], condlist) and x.ndim != 0):
        condlist = [condlist]
    condlist = asarray(condlist, dtype=bool)
    n = len(condlist)
    if n == n2 - 1:     # the "otherwise" condition
        condlist = concatenate([condlist, ~_any(condlist, axis=0, keepdims=True)], axis=0)
        n += 1
    elif n != n2:
        raise ValueError(f"with {n} condition(s), either {n} or {n + 1} functions are expected")
    y = zeros_like(x)
    for cond, func in zip(condlist, funclist):
        if not isinstance(func, collections.abc.Callable):
            y[cond] = func
        else:
            vals = x[cond]
            if vals.size > 0:
                y[cond] = func(vals, *args, **kw)
    return y


def _is_array(c0, condlist):
    """Whether NumPy's piecewise would see condlist[0] as a list or an ndarray: an item of a 1-D xp
    array is a 0-d xp array where NumPy has a scalar."""
    if isinstance(c0, ndarray):
        return not (isinstance(condlist, ndarray) and c0.ndim == 0)
    return isinstance(c0, (list, np.ndarray))


def _host(v):
    return v.get() if isinstance(v, ndarray) else v


def _dev(r):
    if isinstance(r, tuple):
        return tuple(_dev(v) for v in r)
    if isinstance(r, (np.ndarray, np.generic)):
        return asarray(r)
    return r


class vectorize:
    """A function of scalars made to take arrays (matches numpy.vectorize: ``pyfunc, otypes, doc,
    excluded, cache, signature``, also as a decorator). NumPy's own vectorize runs on host copies of
    the array arguments: ``pyfunc`` is called once per element with NumPy scalars (a Python loop, as
    in NumPy), the output dtypes come from ``otypes`` or the first call's result, and the results are
    copied onto the npu as xp arrays (tuples for several outputs). Errors and warnings are NumPy's.

    Partial compared with CuPy, whose vectorize compiles ``pyfunc`` into a device kernel: here it is
    NumPy's Python loop, so it costs a Python call per element (use xp's ufuncs for large arrays)."""

    def __init__(self, pyfunc=np._NoValue, otypes=None, doc=None, excluded=None, cache=False, signature=None):
        self._np = np.vectorize(pyfunc, otypes=otypes, doc=doc, excluded=excluded, cache=cache, signature=signature)
        self.__doc__ = self._np.__doc__

    def __getattr__(self, name):     # pyfunc, otypes, excluded, signature, cache: numpy.vectorize's
        if name == "_np":
            raise AttributeError(name)
        return getattr(self._np, name)

    def __call__(self, *args, **kwargs):
        if self._np.pyfunc is np._NoValue:      # decorator form: vectorize(otypes=...)(func)
            self._np(*args, **kwargs)
            self.__doc__ = self._np.__doc__
            return self
        return _dev(self._np(*[_host(a) for a in args], **{k: _host(v) for k, v in kwargs.items()}))
