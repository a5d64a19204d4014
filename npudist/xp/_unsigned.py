"""Exact uint16 / uint32 / uint64 arithmetic on npu tensors.

xp stores these dtypes in real ``torch.uint16/uint32/uint64`` tensors (so the memory, DLPack and
views say what the dtype says), but PyTorch 2.13 has kernels for few ops on them (copies, views,
indexing without masks, ``mul``, ``==``, bitwise and/or/xor, ``sum``/``prod``/``cumsum``, ``sort``,
``unique``, conversions). The tensors are wrapped in :class:`UIntTensor`, whose
``__torch_function__`` runs the op natively where PyTorch can, and otherwise emulates it exactly:

* uint16 is computed in int32 and uint32 in int64 (every value is held exactly); results are cast
  back with wraparound (C conversion, which is NumPy's modular arithmetic).
* uint64 is computed on the int64 reinterpretation of the same bits: add, subtract, multiply,
  negate, bitwise ops and left shifts give the same bits (arithmetic modulo 2**64). Ordering ops
  (comparisons, max/min, clamp, searchsorted, median...) flip the sign bit first, which maps
  unsigned order onto signed order, and flip results back. Division, remainder, right shifts,
  gcd and lcm of uint64 run NumPy's own loops on the host copy of the operands.

Only xp's own tensors carry the subclass; ``torch.from_dlpack(x)`` / ``xp.to_torch(x)`` hand out
plain tensors. The emulation costs a Python dispatch per op (tens of microseconds), so unsigned
arrays are slower than signed ones, never inexact.
"""
import numpy as np
import torch

# the unsigned dtypes xp emulates: the one definition (xp's modules test membership with `in UINT`)
UINT = frozenset({torch.uint16, torch.uint32, torch.uint64})
# value-exact compute dtype (uint64: the bits reinterpreted as int64)
_COMPUTE = {torch.uint16: torch.int32, torch.uint32: torch.int64, torch.uint64: torch.int64}
_NP_U = {torch.uint16: np.uint16, torch.uint32: np.uint32, torch.uint64: np.uint64}
_SIGN = -(2 ** 63)

T = torch.Tensor
_ORDER = {torch.lt, torch.le, torch.gt, torch.ge, torch.less, torch.less_equal, torch.greater, torch.greater_equal,
          T.__lt__, T.__le__, T.__gt__, T.__ge__, T.lt, T.le, T.gt, T.ge, torch.maximum, torch.minimum, torch.max,
          torch.min, T.max, T.min, torch.amax, torch.amin, T.amax, T.amin, torch.argmax, torch.argmin, T.argmax,
          T.argmin, torch.clamp, T.clamp, torch.clip, T.clip, torch.searchsorted, torch.sort, T.sort, torch.argsort,
          T.argsort, torch.topk, T.topk, torch.kthvalue, T.kthvalue, torch.median, T.median, torch.cummax,
          torch.cummin, T.cummax, T.cummin, torch.msort, torch.unique, torch.unique_consecutive, T.unique,
          torch.aminmax, torch.fmax, torch.fmin, torch.bucketize}
# ops whose integer results are indices / counts, never values of the input
_INDEX = {torch.argmax, torch.argmin, T.argmax, T.argmin, torch.argsort, T.argsort, torch.searchsorted,
          torch.bucketize, torch.nonzero, T.nonzero, torch.argwhere, torch.count_nonzero, T.count_nonzero,
          torch.bincount, T.bincount, torch.histc}
_DIV = {torch.floor_divide: np.floor_divide, T.__floordiv__: np.floor_divide, T.floor_divide: np.floor_divide,
        torch.remainder: np.remainder, T.__mod__: np.remainder, T.remainder: np.remainder,
        torch.fmod: np.fmod, T.fmod: np.fmod, torch.bitwise_right_shift: np.right_shift,
        T.__rshift__: np.right_shift, T.bitwise_right_shift: np.right_shift, torch.gcd: np.gcd, T.gcd: np.gcd,
        torch.lcm: np.lcm, T.lcm: np.lcm}
_RDIV = {T.__rfloordiv__: np.floor_divide, T.__rmod__: np.remainder, T.__rrshift__: np.right_shift}
_INPLACE_NAMES = ("__setitem__", "__iadd__", "__isub__", "__imul__", "__iand__", "__ior__", "__ixor__",
                  "__ilshift__", "__irshift__", "__ifloordiv__", "__imod__")
# ordering ops whose Python int arguments are values (not dims or counts)
_VALUE_ARGS = {torch.lt, torch.le, torch.gt, torch.ge, torch.less, torch.less_equal, torch.greater,
               torch.greater_equal, T.__lt__, T.__le__, T.__gt__, T.__ge__, T.lt, T.le, T.gt, T.ge, torch.maximum,
               torch.minimum, torch.clamp, T.clamp, torch.clip, T.clip, torch.fmax, torch.fmin}
_ABS_FUNCS = {torch.abs, T.abs, T.__abs__, torch.absolute, T.absolute}
_SIGN_FUNCS = {torch.sign, T.sign} | _ABS_FUNCS
_SIZE = {torch.uint16: 2, torch.uint32: 4, torch.uint64: 8}


class UIntTensor(torch.Tensor):
    """An npu tensor of dtype uint16/uint32/uint64 whose ops are exact (see the module docstring)."""

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        for tp in types:
            if tp is not cls and getattr(tp, "_xp_keeps_class", False):
                return NotImplemented   # a negative-stride view's NegStrided first (npudist.xp._negview)
        kwargs = kwargs or {}
        with torch._C.DisableTorchFunctionSubclass():
            if func not in _ORDER and func not in _DIV and func not in _RDIV and func not in _SIGN_FUNCS:
                try:
                    return _rewrap(func(*args, **kwargs))
                except (RuntimeError, NotImplementedError, TypeError, OverflowError, ValueError) as e:
                    first = e
            else:
                first = None
            try:
                return _rewrap(_emulate(func, args, kwargs))
            except Exception:
                if first is not None:
                    raise first from None
                raise


def _uint_alias(t):
    """t as a UIntTensor. ``as_subclass`` makes an alias whose ``_base`` is t, so an alias of a tensor
    that owns its memory is marked as the owner (``owns_memory``): NumPy's ``base``/``flags.owndata``
    of a fresh uint array then read as for any other dtype. (xp's C fast paths wrap their fresh
    results straight into UIntTensor instead, with no alias: ``_base`` is None there.)"""
    u = t.as_subclass(UIntTensor)
    if t._base is None:
        u._xp_owns_memory = True
    return u


def owns_memory(t):
    """Whether tensor t owns its memory (not a view), looking through the UIntTensor alias."""
    return t._base is None or getattr(t, "_xp_owns_memory", False)


def as_uint(t):
    """t with the UIntTensor class if its dtype is unsigned 16/32/64-bit, else t."""
    if t.dtype in _COMPUTE and type(t) is not UIntTensor and not getattr(type(t), "_xp_keeps_class", False):
        return _uint_alias(t)   # (a negative-stride view's NegStrided keeps its class: npudist.xp._negview)
    return t


def plain(t):
    """The plain torch.Tensor over the same memory (for export)."""
    return t.as_subclass(torch.Tensor) if type(t) is UIntTensor else t


def _is_return_type(res):
    return type(res).__module__ == "torch.return_types"


def _rewrap(res):
    if isinstance(res, torch.Tensor):
        if res.dtype in _COMPUTE:
            return res if type(res) is UIntTensor else _uint_alias(res)
        return res.as_subclass(torch.Tensor) if type(res) is UIntTensor else res
    if isinstance(res, tuple):
        vals = [_rewrap(r) for r in res]
        return type(res)(vals) if _is_return_type(res) else tuple(vals)
    if isinstance(res, list):
        return [_rewrap(r) for r in res]
    return res


def _home(args, kwargs):
    """The widest unsigned dtype among the tensor arguments."""
    best = None
    for a in list(args) + list(kwargs.values()):
        for t in (a if isinstance(a, (list, tuple)) else (a,)):
            if isinstance(t, torch.Tensor) and t.dtype in _COMPUTE and (best is None or _SIZE[t.dtype] > _SIZE[best]):
                best = t.dtype
    return best


def _to_compute(x, flip, flip_ints=False):
    if isinstance(x, torch.Tensor):
        if x.dtype == torch.uint64:
            v = plain(x).view(torch.int64)
            return v ^ _SIGN if flip else v
        if x.dtype in _COMPUTE:
            return plain(x).to(_COMPUTE[x.dtype])
        if flip and x.dtype == torch.int64:
            return x ^ _SIGN
        return plain(x)
    if isinstance(x, (list, tuple)) and x and isinstance(x[0], torch.Tensor):
        return type(x)(_to_compute(v, flip) for v in x)
    if type(x) is int and flip and flip_ints:
        return (x - 2 ** 64 if x >= 2 ** 63 else x) ^ _SIGN
    if type(x) is int and x >= 2 ** 63:
        return x - 2 ** 64
    if isinstance(x, torch.dtype) and x in _COMPUTE:
        return _COMPUTE[x]
    return x


def _from_compute(r, home, flip):
    if not isinstance(r, torch.Tensor) or r.dtype != _COMPUTE[home]:
        return r
    if home == torch.uint64:
        return (r ^ _SIGN if flip else r).view(torch.uint64)
    return r.to(home)


def _numpy_div(npfn, a, b, home):
    """uint64 division / remainder / right shift by NumPy's loops on host copies."""
    dev = next(x.device for x in (a, b) if isinstance(x, torch.Tensor))

    def host(x):
        if isinstance(x, torch.Tensor):
            h = plain(x).cpu().numpy()
            return h.view(np.uint64) if x.dtype == torch.uint64 else h.astype(np.uint64)
        return np.uint64(x) if type(x) is int and x >= 0 else x
    with np.errstate(all="ignore"):
        r = npfn(host(a), host(b))
    r = np.asarray(r).astype(np.uint64, copy=False)
    return torch.from_numpy(np.ascontiguousarray(r).view(np.int64)).view(torch.uint64).to(dev)


def _emulate(func, args, kwargs):
    home = _home(args, kwargs)
    if home is None:
        return func(*args, **kwargs)
    out = kwargs.pop("out", None)
    if func in _ABS_FUNCS:              # |x| of unsigned x is x
        return _finish_out(plain(args[0]).clone(), out)
    if func in (torch.sign, T.sign):    # unsigned sign: 0 or 1
        return _finish_out((plain(args[0]) != 0).to(args[0].dtype), out)
    if home == torch.uint64 and (func in _DIV or func in _RDIV):
        a, b = args[0], args[1]
        res = _numpy_div(_DIV.get(func) or _RDIV[func], *((b, a) if func in _RDIV else (a, b)), home)
        return _finish_out(res, out)
    flip = home == torch.uint64 and func in _ORDER
    want = kwargs.get("dtype")
    fi = func in _VALUE_ARGS
    cargs = [_to_compute(a, flip, fi) for a in args]
    ckw = {k: _to_compute(v, flip, fi and k in ("min", "max", "other")) for k, v in kwargs.items()}
    name = getattr(func, "__name__", "")
    inplace = name in _INPLACE_NAMES or (name.endswith("_") and not name.startswith("_"))
    res = func(*cargs, **ckw)
    if inplace:
        self_ = args[0]
        if not (self_.dtype == torch.uint64 and not flip):   # uint64 views wrote through already
            plain(self_).copy_(_from_compute(cargs[0], self_.dtype, flip))
        return self_
    if func in _INDEX:
        return _finish_out(res, out)
    if _is_return_type(res):          # torch.return_types (values, indices)
        res = type(res)([_from_compute(res[0], home, flip)] + list(res[1:]))
    elif isinstance(res, tuple):
        if func in (torch.unique, T.unique, torch.unique_consecutive):
            res = (_from_compute(res[0], home, flip),) + tuple(res[1:])
        else:
            res = tuple(_from_compute(r, home, flip) for r in res)
    else:
        res = _from_compute(res, want if want in _COMPUTE else home, flip)
    return _finish_out(res, out)


def _finish_out(res, out):
    if out is None:
        return res
    plain(out).copy_(plain(res) if isinstance(res, torch.Tensor) else res)
    return out
