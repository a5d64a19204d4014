"""The ufunc engine of the xp core: NumPy's elementwise call protocol (out=, where=, dtype=,
casting=) over PyTorch kernels. xp's ufunc objects (with reduce / accumulate / outer / at) are
npudist.xp._core._ufuncs.ufunc, a subclass: one table of them serves ndarray's operators, the
core's routines and the public xp.add etc.

Dtype resolution is NumPy's own: each call asks ``numpy.<ufunc>.resolve_dtypes`` (cached per
dtype combination) which loop NumPy would run, with Python scalars as weak types (NumPy 2 / NEP 50
promotion), casts the operands to that loop, and runs the PyTorch kernel on the npu tensors.
Loops PyTorch has no kernel for (some float16 / small-integer ones) run in the next wider dtype
and are cast back, which is what NumPy's own float16 loops do. float64 work follows the float64
mode (npudist.xp._config).
"""
import inspect as _inspect

import numpy as np
import torch

from . import _config, _host
from ._convert import ArrayBase, as_tensor, check_order, check_same_kind, in_order, operand
from ._dtypes import DEMOTE_TORCH, NP_TO_TORCH, TORCH_TO_NP, complex_to_real, to_dtype
from ._unsigned import UINT, UIntTensor, as_uint

_state = _config.state
_INT_TDT = {torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8, torch.uint16, torch.uint32, torch.uint64}
_UPCAST = {torch.float16: torch.float32, torch.int8: torch.int64, torch.int16: torch.int64,
           torch.int32: torch.int64, torch.uint8: torch.int64, torch.bool: torch.uint8}
_PY_TYPES = (int, float, complex, bool)
_BOOL = np.dtype(bool)
_COMPARISONS = {"equal", "not_equal", "less", "less_equal", "greater", "greater_equal"}
_NO = object()   # the host fast path declined: take the PyTorch path
_host_view = _host.host_view
_new_result = _host.new_result
_any_capture = _host.capturing
_ERR, _IGNORE, _BIG = _host._ERR, getattr(_host, "_IGNORE", None), _host._BIG
_wait = _host._C._wait_current_stream


_SCALARS = {}


def _no_fast(*args):
    return None



_CASTINGS = ("no", "equiv", "safe", "same_kind", "unsafe")


class _Signature:
    """A ufunc's signature= (a tuple of dtypes or None per operand, inputs then outputs, or a
    'ii->d' string), hashable for the loop cache; resolved by NumPy's own resolve_dtypes."""
    __slots__ = ("dtypes",)

    def __init__(self, signature):
        if isinstance(signature, str):
            ins, _, outs = signature.partition("->")
            signature = tuple(np.dtype(c) for c in ins + outs)
        elif isinstance(signature, (tuple, list)):
            signature = tuple(None if d is None else np.dtype(to_dtype(d)) for d in signature)
        else:
            signature = np.dtype(to_dtype(signature))
        self.dtypes = signature

    def __hash__(self):
        return hash(("signature", self.dtypes))

    def __eq__(self, other):
        return type(other) is _Signature and other.dtypes == self.dtypes

class _PyUfuncBase:
    """The base of ufunc without the extension's npudist._C._XpUfuncBase: __call__ in Python."""

    def __call__(self, *args, **kwargs):
        return self._call(*args, **kwargs)


# The base class: calls with positional operands run the C fast path (``self._fast``) straight from
# the call and fall back to ``_call_declined``; other calls run ``_call`` (npudist._C._XpUfuncBase).
_UfuncBase = getattr(_host._C, "_XpUfuncBase", None) or _PyUfuncBase


def _scalar_tensor(o, tdt):
    """A Python scalar operand as a cached host 0-d tensor of the loop dtype: NumPy casts a weak
    scalar to the loop dtype before computing (so does this, float16 included), and PyTorch takes
    host 0-d tensors beside npu tensors without a device copy (cheaper than a Python number,
    which PyTorch wraps anew on every call, or an npu 0-d tensor)."""
    key = (type(o), o, tdt)
    try:
        return _SCALARS[key]
    except KeyError:
        pass
    t = torch.tensor(o, dtype=tdt)
    if type(t) is not torch.Tensor:  # made under tracing (xp.fuse's FakeTensor): never reuse it eagerly
        return t
    if len(_SCALARS) >= 1024:
        _SCALARS.clear()
    _SCALARS[key] = t
    return t


class ufunc(_UfuncBase):
    """An elementwise function with NumPy's ufunc interface (matches numpy.ufunc).

    ``f(x1[, x2], /, out=None, *, where=True, casting='same_kind', dtype=None)``; inputs broadcast
    (NumPy's rules); result dtype is NumPy 2's; TypeError where NumPy has no loop for the dtypes.

    Calling: the base class (npudist._C._XpUfuncBase) runs the C fast path first for calls with
    positional operands only, then ``_call_declined``; calls with keywords run ``_call``. Subclasses
    must not define ``__call__`` (they would put a Python frame back in front of every call)."""

    def __init__(self, name, fn, nin, nout=1, scalar_ok=False, np_name=None, doc=None, *, array_type=None):
        self._array_type = array_type   # the class results are made of (xp.ndarray; bind_array_type sets it later)
        self.__name__ = name
        self._np = getattr(np, np_name or name)
        self._fn = fn
        self.nin = nin
        self.nout = nout
        self.nargs = nin + nout
        self._scalar_ok = scalar_ok
        self._cache = {}
        # which calls may run NumPy's loop on npu memory (npudist.xp._host: the measured choice)
        self._host_multi = name in _host.MULTI_OP
        self._host_lex = name in _host.LEX
        self._host_big = name in _host.NUMPY_FASTER
        self.identity = self._np.identity
        # the C fast path (npudist._C._XpHostUfunc; none without it or before the array type is known)
        self._fast = _no_fast
        if array_type is not None:
            self.bind_array_type(array_type)
        self.__doc__ = doc or f"Elementwise {name} on the npu (matches numpy.{np_name or name})."

    def bind_array_type(self, array_type):
        """Records the class results are made of and builds the C fast path (positional operands
        only), which reads that class's slots. For a ufunc made before its class (xp's one table,
        npudist.xp._core._ufuncs, exists before ndarray so the class body can hold its operators),
        npudist.xp._core._array.register calls it once the class exists; until then calls fail."""
        self._array_type = array_type
        self._fast = _host.fast_ufunc(self, _state) or _no_fast

    def __repr__(self):
        return f"<xp.ufunc '{self.__name__}'>"

    @property
    def __signature__(self):
        """The call's signature for inspect.signature (the C base's call has none of its own)."""
        return _inspect.signature(self._call)

    def _resolve(self, key_types, dtype):
        key = (key_types, dtype)
        try:
            return self._cache[key]
        except KeyError:
            pass
        types = tuple(TORCH_TO_NP[k] if isinstance(k, torch.dtype) else (_BOOL if k is bool else k) for k in key_types)
        try:
            if type(dtype) is _Signature:   # signature=: NumPy picks the loop it names
                loop = self._np.resolve_dtypes(types + (None,) * self.nout, signature=dtype.dtypes, casting="unsafe")
            elif dtype is not None:
                # NumPy's dtype= fixes the output dtype(s) only (signature=(None, ..., dtype)) and the
                # loop is chosen from that, Python scalars included (floor_divide(0, 0, dtype=float64))
                loop = self._np.resolve_dtypes(types + (None,) * self.nout,
                                               signature=(None,) * self.nin + (dtype,) * self.nout, casting="unsafe")
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

    def _call(self, *args, out=None, where=True, casting="same_kind", dtype=None, order="K", subok=True,
              signature=None):
        """The call with keywords (and every call without the C base class)."""
        if out is None and where is True and dtype is None and casting == "same_kind" and order == "K" \
                and signature is None:
            r = self._fast(*args)   # NumPy's loop on npu memory in one C call, or None
            if r is not None:
                return r
        return self._general(args, out, where, casting, dtype, order, signature)

    def _call_declined(self, *args):
        """A positional-only call the C fast path declined (the base class tried it already)."""
        return self._general(args, None, True, "same_kind", None, "K", None)

    def _general(self, args, out, where, casting, dtype, order, signature):
        """The Python paths: NumPy's loop on npu memory (_host) where chosen, else PyTorch's kernels."""
        nin = self.nin
        if casting not in _CASTINGS:
            raise ValueError(f"casting must be one of 'no', 'equiv', 'safe', 'same_kind', 'unsafe' (got {casting!r})")
        if order != "K":
            order = check_order(order)
        if signature is not None:
            if dtype is not None:
                raise TypeError("cannot specify both 'signature' and 'dtype'")
            dtype = _Signature(signature)
        if (where is True and dtype is None and order == "K" and signature is None and len(args) == nin
                and (out is not None or casting == "same_kind") and _state.float64_mode == "off" and _host.ENABLED and not _any_capture()
                and self._host_worth(args)):
            r = self._host(args, out, casting)
            if r is not _NO:
                return r
        if len(args) != nin:
            if nin < len(args) <= nin + self.nout and out is None:
                extra = args[nin:]   # positional outputs; NumPy lets trailing ones be left out (None)
                out = extra[0] if self.nout == 1 else tuple(extra) + (None,) * (self.nout - len(extra))
                args = args[:nin]
            else:
                raise TypeError(f"xp.{self.__name__} takes {nin} positional argument(s) but {len(args)} were given")
        ops = []
        key = []
        device = None
        nd = self._array_type
        for a in args:
            tp = type(a)
            if tp is nd:
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
        if dtype is not None and type(dtype) is not _Signature:
            dtype = to_dtype(dtype)
        loop = self._resolve(tuple(key), dtype)
        if casting != "unsafe":
            self._check_input_casting(key, loop, casting)
        if device is None:
            device = _config.device()
        conv = []
        for i, o in enumerate(ops):
            tdt = loop[i]
            if isinstance(o, torch.Tensor):
                conv.append(o if o.dtype == tdt else _complex_to_real(o, tdt).to(tdt))
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
                if tdt not in UINT:
                    conv.append(_scalar_tensor(o, tdt))
                elif self._scalar_ok and i == 1:
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
        if order != "K" and out is None:   # NumPy's order= for new results ('A': F when the inputs are)
            like = next((o for o in ops if isinstance(o, torch.Tensor)), None)
            res = (in_order(res, order, like=like) if self.nout == 1 else
                   tuple(in_order(r, order, like=like) for r in res))
        if self.nout == 1:
            if out is None and where is True:
                r = object.__new__(nd)
                r._t = as_uint(res) if res.dtype in UINT else res
                return r
            return self._finish(res, out, where, casting, TORCH_TO_NP[out_tdts[0]])
        if out is None:
            out = (None,) * self.nout
        return tuple(self._finish(r, o, where, casting, TORCH_TO_NP[d]) for r, o, d in zip(res, out, out_tdts))

    def _check_input_casting(self, key, loop, casting):
        """NumPy's input casting rule: each array operand must cast to its loop dtype under
        ``casting`` (Python scalars are weak and not checked, as in NumPy)."""
        for i, k in enumerate(key):
            if isinstance(k, torch.dtype) and k != loop[i]:
                src, dst = TORCH_TO_NP[k], TORCH_TO_NP[loop[i]]
                if not np.can_cast(src, dst, casting):
                    raise TypeError(f"Cannot cast ufunc '{self._np.__name__}' input {i} from dtype('{src}') to "
                                    f"dtype('{dst}') with casting rule '{casting}' (NumPy's UFuncTypeError)")

    def _host_worth(self, args):
        """Cheap pre-check (no views made): whether the host path may be chosen for this call, so
        the calls that stay on PyTorch pay almost nothing for it (exact choice in _host)."""
        if self._host_multi:
            return True
        nd = self._array_type
        for a in args:
            if type(a) is nd:
                t = a._t
                if type(t) is UIntTensor:
                    return True
                if self._host_lex and t.is_complex():
                    return True
                if self._host_big and t.numel() > _host.SMALL and torch.get_num_threads() == 1:
                    return True
        return False

    def _host(self, args, out, casting):
        """NumPy's loop on zero-copy views of the operands' npu memory (npudist.xp._host), for
        small results; _NO when the call does not qualify (the PyTorch path runs instead). NumPy
        errors (casting, overflow, no loop) also decline, so xp's own error is raised."""
        nd = self._array_type
        key = []
        views = []
        shape = None
        dev = None
        like = None
        same = True
        for a in args:
            tp = type(a)
            if tp is nd:
                t = a._t
                try:
                    h = a._h
                    if not h or h[0] is not t or h[3].data_ptr() != h[1]:   # (): the C fast path's, no view yet
                        h = _host_view(a, t)
                except AttributeError:
                    h = _host_view(a, t)
                if h is None:
                    return _NO
                v = h[2]
                views.append(v)
                key.append(h[5])   # the dtype (no attribute lookup through UIntTensor's __torch_function__)
                if dev is None:
                    dev = h[4]
                    shape = v.shape
                    like = h[3]
                    like_dt = h[5]
                elif h[4] != dev:
                    return _NO
                elif v.shape != shape:
                    same = False
            elif tp in _PY_TYPES:
                views.append(a)
                key.append(tp)
            else:
                return _NO
        if dev is None:
            return _NO
        if not same:
            try:
                shape = np.broadcast_shapes(*(v.shape for v in views if type(v) is np.ndarray))
            except ValueError:
                return _NO
            like = None
        size = 1
        for n in shape:
            size *= n
        key = tuple(key)
        try:
            loop = self._cache[(key, None)]
        except KeyError:
            loop = self._resolve(key, None)
        if not (_host.host_small(self.__name__, loop + key) if size <= _host.SMALL else
                _host.numpy_faster(self.__name__, loop + key)):
            return _NO
        if out is None:
            if self.nout == 1 and _ERR is not None:   # the hot path, inlined (~1 us of the ~5 us call)
                tdt = loop[-1]
                t = torch.empty_like(like) if like is not None and like_dt is tdt else \
                    torch.empty(shape, dtype=tdt, device=_host.torch_device(dev))
                ptr = t.data_ptr()
                v = np.ndarray(shape, TORCH_TO_NP[tdt], _BIG.from_address(ptr))
                _wait(dev)
                tok = _ERR.set(_IGNORE)
                try:
                    self._np(*views, out=v)
                except (TypeError, ValueError, OverflowError):
                    return _NO
                finally:
                    _ERR.reset(tok)
                r = object.__new__(nd)
                if tdt in UINT:
                    u = r._t = as_uint(t)
                    r._h = (u, ptr, v, t, dev, tdt)
                else:
                    r._t = t
                    r._h = (t, ptr, v, t, dev, tdt)
                return r
            res = []
            ov = []
            for tdt in loop[self.nin:]:
                r, v = _new_result(shape, tdt, dev, like if like is not None and like.dtype == tdt else None, nd)
                res.append(r)
                ov.append(v)
            casting = "same_kind"
        else:
            if type(out) is not tuple:
                out = (out,)
            if len(out) != self.nout:
                return _NO
            ov = []
            for o in out:
                if type(o) is not nd:
                    return _NO
                h = _host_view(o, o._t)
                if h is None or h[4] != dev:
                    return _NO
                ov.append(h[2])
            res = out
        _host.wait(dev)
        try:
            _host.run(self._np, views, tuple(ov), casting)
        except (TypeError, ValueError, OverflowError):
            return _NO
        return res[0] if self.nout == 1 else tuple(res)

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
                if "Expected all tensors to be on the same device" in msg:
                    from ._device import mixed_device_error
                    raise mixed_device_error(conv) from None
                shapes = [tuple(c.shape) for c in conv if isinstance(c, torch.Tensor)]
                try:
                    np.broadcast_shapes(*shapes)
                except ValueError:   # NumPy's error class for operands that do not broadcast
                    raise ValueError("operands could not be broadcast together with shapes " +
                                     " ".join(str(s).replace(" ", "") for s in shapes)) from None
                raise
            if any(isinstance(c, torch.Tensor) and c.dtype in UINT and type(c) is not UIntTensor for c in conv):
                return self._fn(*[as_uint(c) if isinstance(c, torch.Tensor) else c for c in conv])
            up = [c.to(_UPCAST[c.dtype]) if isinstance(c, torch.Tensor) and c.dtype in _UPCAST else c for c in conv]
            if all(u is c for u, c in zip(up, conv)):
                raise TypeError(f"xp.{self.__name__}: PyTorch has no kernel for these dtypes: {msg}") from None
            return self._fn(*up)

    def _finish(self, res, out, where, casting, res_dtype):
        """Result tensor -> new array, or written into out (NumPy's casting and where= rules)."""
        wrap = self._wrap
        if out is not None and isinstance(out, tuple):
            if len(out) != 1:
                raise ValueError(f"out must be a tuple of 1 array for this ufunc, got {len(out)}")
            out = out[0]
        if where is True:
            if out is None:
                return wrap(res)
            if not isinstance(out, ArrayBase):
                raise TypeError(f"out must be an xp.ndarray, got {type(out).__name__}")
            self._check_output_casting(res_dtype, out.dtype, casting)
            ot = out._t
            res = _complex_to_real(res, ot.dtype)
            if tuple(res.shape) != tuple(ot.shape):
                try:
                    res = res.broadcast_to(ot.shape)
                except RuntimeError:
                    raise ValueError(f"non-broadcastable output operand with shape {tuple(ot.shape)} doesn't match "
                                     f"the broadcast shape {tuple(res.shape)}") from None
            ot.copy_(res)
            return out
        mask = as_tensor(where)
        if mask.dtype != torch.bool:
            raise TypeError("where= must be a boolean array")
        if out is None:
            shape = torch.broadcast_shapes(res.shape, mask.shape)
            base = torch.zeros(shape, dtype=res.dtype, device=res.device)
            return wrap(torch.where(mask, res, base))
        self._check_output_casting(res_dtype, out.dtype, casting)
        ot = out._t
        ot.copy_(torch.where(mask, _complex_to_real(res, ot.dtype).to(ot.dtype), ot))
        return out

    def _check_output_casting(self, res_dtype, out_dtype, casting):
        if casting == "same_kind":
            check_same_kind(res_dtype, out_dtype)
        elif casting != "unsafe" and not np.can_cast(res_dtype, out_dtype, casting):
            raise TypeError(f"Cannot cast ufunc '{self._np.__name__}' output from dtype('{res_dtype}') to "
                            f"dtype('{out_dtype}') with casting rule '{casting}' (NumPy's UFuncTypeError)")

    def _wrap(self, t):
        r = object.__new__(self._array_type)
        r._t = as_uint(t) if t.dtype in UINT else t
        return r


def _complex_to_real(res, out_tdt):
    return complex_to_real(res, out_tdt, stacklevel=4)


def _cast_back(res, out_tdts):
    if isinstance(res, tuple):
        return tuple(r if r.dtype == d else r.to(d) for r, d in zip(res, out_tdts))
    d = out_tdts[0]
    return res if res.dtype == d else res.to(d)


