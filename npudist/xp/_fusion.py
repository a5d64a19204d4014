"""``xp.fuse``: CuPy's kernel fusion, through torch.compile on npu.

``@xp.fuse()`` over a function of xp arrays and scalars that uses xp's elementwise operations
and reductions. On the first call for a combination of input dtypes and ndims, the function is
traced once with symbolic shapes (``torch.fx.experimental.proxy_tensor.make_fx``: xp runs its
NumPy-semantics Python as usual, the PyTorch ops it issues on the arrays' tensors are recorded),
and the resulting graph is compiled by ``torch.compile`` with Inductor, which on npu generates
C++ kernels that run on the npu buffers (npudist/graph/compile): a chain of elementwise ops
becomes one loop, a reduction of it a second, with no intermediate arrays. Later calls with the
same dtypes and ndims run the compiled graph; other shapes of the same ndims reuse it (dynamic
shapes).

Reference behaviour: ``cupy.fuse`` (CuPy compiles its own CUDA kernel from a trace of the
function); results equal the unfused function's (dtypes by NumPy's rules, as xp's).

Limits (each raises, nothing runs unfused in disguise):
- Python scalars are traced as constants: the cache key holds their values, so a scalar that
  changes on every call compiles every call (pass it as a 0-d array instead, which is not weak
  in NumPy 2's promotion).
- Functions that read array values into Python (``.item()``, ``float(x[0])``, a Python ``if``
  on an element) cannot be traced: ``TypeError`` naming the cause. Boolean masks and other
  operations with value-dependent output sizes are traced (torch.compile's dynamic sizes).
- uint16/uint32/uint64 arrays are emulated in xp and cannot be traced (``TypeError``).
- Keyword arguments of the fused function are not supported (as CuPy's).
"""
from __future__ import annotations

import functools
import threading

import numpy as np
import torch

from ._core import ndarray, wrap
from ._device import check_devices, current_device_id
from ._unsigned import UINT

_PY_SCALARS = (bool, int, float, complex)
_tracing = threading.local()



class _Unfused(Exception):
    """An argument the trace cannot take as it is (a negative-stride view): the call runs unfused."""

class FusionError(TypeError):
    """A function xp.fuse cannot trace into a graph (see the message for why)."""


def _shape_class(n):
    # PyTorch's symbolic tracing specialises sizes 0 and 1 (broadcasting decisions depend on
    # them): they are part of the cache key, every other size is dynamic
    return n if n < 2 else -1


class Fusion:
    """A fused function (``cupy.fuse``'s Fusion): call it like the original function.

    ``kernel_name`` is the name of the fused function in messages (CuPy's kernel name).
    ``cache_info()`` gives the number of compiled variants; ``clear_cache()`` drops them.
    """

    def __init__(self, func, name=None):
        self.func = func
        self.name = name or getattr(func, "__name__", "fused")
        self._cache = {}
        self._lock = threading.Lock()
        functools.update_wrapper(self, func)

    def __repr__(self):
        return f"<xp.Fusion {self.name!r}>"

    def cache_info(self):
        """{'variants': number of compiled graphs}."""
        return {"variants": sum(len(v) for v in self._cache.values())}

    def clear_cache(self):
        self._cache.clear()

    def __call__(self, *args, **kwargs):
        if kwargs:
            raise TypeError(f"xp.fuse: {self.name}() got keyword arguments {sorted(kwargs)}; fused functions take "
                            f"positional arguments only (as cupy.fuse)")
        if getattr(_tracing, "active", False) or not any(isinstance(a, (ndarray, torch.Tensor)) for a in args):
            # inside another fused function's trace (composition), or no xp array among the
            # arguments: the plain function, as cupy.fuse does
            return self.func(*args)
        try:
            key, tensors, template = self._classify(args)
        except _Unfused:   # a negative-stride view (npudist.xp._negview) cannot be traced: run unfused
            return self.func(*args)
        dev = current_device_id()
        check_devices(tensors, dev)
        key = (dev,) + key
        variants = self._cache.get(key)
        if variants:
            for guard, compiled, out_spec in variants:
                if guard is None or guard(tensors):
                    return self._run(compiled, tensors, out_spec, args)
        with self._lock:
            guard, compiled, out_spec = self._build(template, tensors, args)
            self._cache.setdefault(key, []).append((guard, compiled, out_spec))
        return self._run(compiled, tensors, out_spec, args)

    def _run(self, compiled, tensors, out_spec, args):
        try:
            res = compiled(*tensors)
        except Exception as e:
            # bad input (shapes that do not broadcast, ...) fails inside the compiled graph with
            # torch.compile's error; the unfused function gives the error xp users know
            self.func(*args)
            raise FusionError(f"xp.fuse: {self.name}() failed in its compiled graph: {e}") from e
        return self._unpack(res, out_spec)

    def _classify(self, args):
        key, tensors, template = [], [], []
        for a in args:
            if isinstance(a, ndarray):
                t = a._t
            elif isinstance(a, torch.Tensor) and a.device.type == "npu":
                t = a
            elif isinstance(a, (_PY_SCALARS, np.generic)):
                key.append(("s", type(a), a.item() if isinstance(a, np.generic) else a))
                template.append(("s", a))
                continue
            else:
                raise TypeError(f"xp.fuse: {self.name}() got an argument of type {type(a).__name__}; fused "
                                f"functions take xp arrays, npu tensors and scalars")
            if getattr(type(t), "_xp_keeps_class", False):
                raise _Unfused
            if t.dtype in UINT:
                raise FusionError(f"xp.fuse: {self.name}(): {str(t.dtype).replace('torch.', '')} arrays are emulated "
                                  f"by xp and cannot be traced; cast to int64 (or run the function unfused)")
            key.append(("a", t.dtype, tuple(_shape_class(n) for n in t.shape)))
            template.append(("a", None))
            tensors.append(t)
        return tuple(key), tensors, template

    def _build(self, template, tensors, args):
        from torch.fx.experimental.proxy_tensor import make_fx

        func, name = self.func, self.name
        out_spec = []

        def traced(*ts):
            it = iter(ts)
            xs = [wrap(next(it)) if kind == "a" else value for kind, value in template]
            res = func(*xs)
            single = not isinstance(res, (tuple, list))
            outs = [res] if single else list(res)
            flat = []
            out_spec.clear()
            out_spec.append(single)
            for r in outs:
                if not isinstance(r, ndarray):
                    raise FusionError(f"xp.fuse: {name}() returned a {type(r).__name__}; fused functions return xp "
                                      f"arrays (or a tuple of them)")
                flat.append(r._t)
            return tuple(flat)

        _tracing.active = True
        try:
            gm = make_fx(traced, tracing_mode="symbolic")(*tensors)
        except FusionError:
            raise
        except Exception as e:   # data-dependent operations, untraceable Python
            _tracing.active = False
            func(*args)   # bad input: the error the unfused function gives
            raise FusionError(f"xp.fuse: {name}() cannot be traced into a graph: {type(e).__name__}: "
                              f"{str(e).splitlines()[0] if str(e) else ''} (reading array values into Python - "
                              f"item(), float(x[i]), Python branches on elements - cannot be fused)") from e
        finally:
            _tracing.active = False
        guard = _guard_of(gm)
        compiled = torch.compile(gm, dynamic=True, fullgraph=True)
        return guard, compiled, tuple(out_spec)

    @staticmethod
    def _unpack(res, out_spec):
        single = out_spec[0]
        arrays = tuple(wrap(t) for t in res)
        return arrays[0] if single else arrays


def _guard_of(gm):
    """A predicate over input tensors that holds when the shape assumptions made while tracing
    (beyond the 0/1 sizes in the key) hold for them; None when there are none."""
    placeholders = [n.meta.get("val") for n in gm.graph.nodes if n.op == "placeholder"]
    fake = next((p for p in placeholders if isinstance(p, torch.Tensor)), None)
    shape_env = getattr(getattr(fake, "fake_mode", None), "shape_env", None)
    if shape_env is None or not shape_env.guards:
        return None

    def guard(tensors):
        return shape_env.evaluate_guards_for_args(placeholders, list(tensors))
    return guard


def fuse(*args, **kwargs):
    """CuPy's ``cupy.fuse``: ``@xp.fuse`` / ``@xp.fuse()`` / ``xp.fuse(kernel_name='f')(fn)``.

    Returns a :class:`Fusion`: calling it traces ``fn`` once per input dtypes/ndims and runs the
    kernels torch.compile (Inductor) generates for the npu. See the module docstring for limits.
    """
    name = kwargs.pop("kernel_name", None)
    if kwargs:
        raise TypeError(f"xp.fuse: unexpected keyword argument(s) {sorted(kwargs)} (only kernel_name)")
    if len(args) == 1 and callable(args[0]):
        return Fusion(args[0], name)
    if args:
        raise TypeError("xp.fuse takes a function, or only keyword arguments (@xp.fuse(kernel_name=...))")
    return lambda f: Fusion(f, name)
