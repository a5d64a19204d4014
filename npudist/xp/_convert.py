"""Operand conversion of the xp core: anything array-like -> npu tensor, axis normalisation,
memory order, the float64 mode. Imports nothing of xp above _dtypes/_config/_unsigned.

xp arrays are recognised through ArrayBase, the slot layout ndarray (npudist.xp._core) derives
from, so this module never needs the ndarray class itself."""
import numbers

import numpy as np
import torch

from . import _config
from ._dtypes import DEMOTE_TORCH, NP_TO_TORCH, TORCH_TO_NP, cast, np_dtype, to_dtype
from ._negview import strides_of
from ._unsigned import UINT, as_uint

_PY_SCALAR_DTYPE = {bool: torch.bool, int: torch.int64, float: torch.float64, complex: torch.complex128}


class ArrayBase:
    """Memory layout of xp.ndarray: one npu tensor in ``_t``. Lower layers test
    ``isinstance(x, ArrayBase)``; npudist.xp._core.ndarray is the only subclass."""
    # _b: the xp array a view was made from (for .base); _h: cached NumPy view (npudist.xp._host)
    __slots__ = ("_t", "_b", "_h", "__weakref__")


def tensor_of(a):
    """The tensor of an xp array, or the npu tensor made from anything array-like (the one
    unwrapping helper of the package)."""
    return a._t if isinstance(a, ArrayBase) else as_tensor(a)


def is_python_scalar(x):
    return type(x) in _PY_SCALAR_DTYPE


def as_tensor(obj, dtype=None, copy=None, device=None):
    t = _as_tensor(obj, dtype, copy, device)
    return as_uint(t) if t.dtype in UINT else t


def _as_tensor(obj, dtype=None, copy=None, device=None):
    """Anything array-like -> torch tensor on the npu (the memory of xp arrays and npu tensors is
    shared unless a copy or dtype change is needed; ``copy=False`` then raises ValueError).

    ``dtype`` is a normalized numpy.dtype or None; NumPy's rules pick the dtype of Python data."""
    tdt = NP_TO_TORCH[dtype] if dtype is not None else None
    if isinstance(obj, ArrayBase):
        t = obj._t
    elif isinstance(obj, torch.Tensor):
        np_dtype(obj.dtype)  # rejects dtypes without a NumPy twin
        t = obj
        if t.is_conj() or t.is_neg():
            t = t.resolve_conj().resolve_neg()
    else:
        dev = device if device is not None else _config.device()
        tp = type(obj)
        if tp in _PY_SCALAR_DTYPE and (tdt is None or tdt is _PY_SCALAR_DTYPE[tp]):
            return torch.tensor(obj, dtype=_PY_SCALAR_DTYPE[tp], device=dev)
        # a scalar cast to another dtype goes through NumPy (its casting: uint64 from a float,
        # OverflowError for out-of-range ints, which torch.tensor would wrap or refuse)
        if isinstance(obj, (np.ndarray, np.generic)):
            a = obj
        elif hasattr(obj, "__dlpack__") and not isinstance(obj, (list, tuple)):
            t = torch.from_dlpack(obj)
            np_dtype(t.dtype)
            if tdt is not None and t.dtype != tdt:
                t = cast(t, tdt)
            return t.to(dev, copy=bool(copy))
        else:
            try:
                a = np.asarray(obj, dtype=dtype)
            except OverflowError:
                raise
            if a.dtype == object:
                raise TypeError(f"cannot make an xp array from {type(obj).__name__} {obj!r:.80}: NumPy makes it an "
                                f"object array (ragged nesting or non-numeric items)")
        if copy is False:
            raise ValueError(f"asarray(copy=False): {type(obj).__name__} data is host memory and has to be copied "
                             f"onto the npu")
        if dtype is not None and a.dtype != dtype:
            a = a.astype(dtype)
        else:
            to_dtype(a.dtype)
        if a.dtype.byteorder not in "=|":
            a = a.astype(a.dtype.newbyteorder("="))
        if a.dtype.kind in "iu" and a.dtype.char in "qQ":
            a = a.view(np.dtype(a.dtype.name))   # long long vs long: the same dtype, torch knows only one
        if a.ndim > 1 and a.flags.f_contiguous and not a.flags.c_contiguous and a.flags.writeable:
            rev = tuple(range(a.ndim - 1, -1, -1))     # a Fortran-ordered input stays Fortran (NumPy's 'K')
            return torch.from_numpy(a.T).to(dev).permute(rev)
        if not a.flags.c_contiguous or not a.flags.writeable or min(a.strides, default=0) < 0:
            # (a length-1 axis may keep a negative stride in a C-contiguous array; torch takes none)
            a = np.array(a, order="C", copy=True)
        t = torch.from_numpy(np.asarray(a))
        return t.to(dev)
    if device is not None and t.device != device:
        t = t.to(device)
        copied = True
    elif t.device.type != "npu":
        t = t.to(_config.device())
        copied = True
    else:
        copied = False
    if tdt is not None and t.dtype != tdt:
        if copy is False:
            raise ValueError(f"asarray(copy=False): converting {TORCH_TO_NP[t.dtype]} to {dtype} needs a copy")
        t = cast(t, tdt)
        copied = True
    if copy and not copied:
        t = t.clone()
    elif copy is False and copied:
        raise ValueError("asarray(copy=False): the input is not on the npu, so it has to be copied")
    return t


def operand(x):
    """Operand of an elementwise op: a tensor or a Python scalar."""
    if isinstance(x, ArrayBase):
        return x._t
    tp = type(x)
    if tp in _PY_SCALAR_DTYPE:
        return x
    if isinstance(x, numbers.Number) and not isinstance(x, (np.generic,)):
        # other numbers (fractions, decimals): NumPy treats them as Python floats
        return float(x)
    return as_tensor(x)


_ORDERS = ("C", "F", "A", "K")


def check_order(order, allowed=_ORDERS):
    """order= normalised to 'C'/'F'/'A'/'K' (None -> 'K'); ValueError as NumPy for anything else."""
    if order is None:
        return "K"
    o = order.upper() if isinstance(order, str) and len(order) == 1 else order
    if o not in allowed:
        raise ValueError(f"order must be one of {', '.join(repr(x) for x in allowed)}, got {order!r}")
    return o


def is_f_contiguous(t):
    return t.ndim <= 1 and t.is_contiguous() or t.permute(*range(t.ndim - 1, -1, -1)).is_contiguous()


def f_layout(t):
    """t laid out Fortran-ordered (column-major, NumPy's canonical F strides: size-1 axes
    included), with t's shape and values; t itself when it already has those strides."""
    if t.ndim < 2:
        return t.contiguous()
    strides, s = [], 1
    for n in t.shape:
        strides.append(s)
        s *= max(n, 1)
    if t.stride() == tuple(strides):
        return t
    out = t.new_empty_strided(tuple(t.shape), tuple(strides))
    out.copy_(t)
    return out


def k_layout(t, proto):
    """A new copy of t (proto's shape) laid out in proto's axis order: NumPy's order='K' (axes
    sorted by descending absolute stride, stable; C- and F-contiguous prototypes give C and F)."""
    n = proto.ndim
    if proto.is_contiguous():
        perm = list(range(n))
    elif is_f_contiguous(proto):
        perm = list(range(n - 1, -1, -1))
    else:
        st = strides_of(proto)   # (a negative-stride view's own strides)
        perm = sorted(range(n), key=lambda i: -abs(st[i]))
    inv = sorted(range(n), key=perm.__getitem__)
    return t.permute(perm).clone(memory_format=torch.contiguous_format).permute(inv)


def in_order(t, order, like=None, copy=False):
    """t laid out as numpy's order= asks ('C', 'F', 'A': F if ``like`` (or t) is F- and not
    C-contiguous, 'K': keep the axis order of ``like``/t). Copies only when needed unless copy=True."""
    src = t if like is None else like
    if order == "A":
        order = "F" if is_f_contiguous(src) and not src.is_contiguous() else "C"
    if order == "K":
        if like is not None and like is not t and like.ndim == t.ndim and like.ndim > 1 and not like.is_contiguous():
            return k_layout(t, like)
        return k_layout(t, t) if copy else t
    if order == "F":
        if is_f_contiguous(t) and not copy:
            return t
        r = f_layout(t)
        return r.clone() if r is t else r
    if t.is_contiguous() and not copy:
        return t
    return t.clone(memory_format=torch.contiguous_format)


def to_numpy(t):
    """torch tensor -> NumPy array (a host copy)."""
    if t.is_conj() or t.is_neg():
        t = t.resolve_conj().resolve_neg()
    return t.detach().cpu().numpy()


def check_same_kind(src, dst, what="output"):
    if not np.can_cast(src, dst, "same_kind"):
        raise TypeError(f"cannot cast the result from {src} to {what} dtype {dst} with casting rule 'same_kind' "
                        f"(NumPy's UFuncTypeError); pass casting='unsafe' or use an {what} of dtype {src}")


def normalize_axis(axis, ndim, name="axis"):
    try:
        axis = int(axis.__index__())
    except AttributeError:
        raise TypeError(f"{name} must be an integer, got {type(axis).__name__}") from None
    if not -ndim <= axis < ndim:
        raise np.exceptions.AxisError(axis, ndim)
    return axis % ndim if ndim else 0


def normalize_axes(axis, ndim):
    """axis None/int/tuple -> sorted tuple of non-negative axes (None: all). Duplicate axes raise."""
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, (tuple, list)):
        axes = tuple(normalize_axis(a, ndim) for a in axis)
        if len(set(axes)) != len(axes):
            raise ValueError(f"duplicate value in 'axis': {axis}")
        return axes
    return (normalize_axis(axis, ndim),)


def f64(fn, *args, **kwargs):
    """Runs fn(*args) under the float64 mode: with 'float32' the float64/complex128 tensor
    arguments (and a float64 dtype= keyword) are demoted and float32/complex64 results promoted
    back; with 'cpu' the tensors are computed on the host and the results moved back."""
    mode = _config.state.float64_mode
    if mode == "off" or not any(isinstance(a, torch.Tensor) and a.dtype in DEMOTE_TORCH for a in args):
        return fn(*args, **kwargs)
    if mode == "float32":
        args = [a.to(DEMOTE_TORCH[a.dtype]) if isinstance(a, torch.Tensor) and a.dtype in DEMOTE_TORCH else a
                for a in args]
        if kwargs.get("dtype") in DEMOTE_TORCH:
            kwargs["dtype"] = DEMOTE_TORCH[kwargs["dtype"]]
        back = {torch.float32: torch.float64, torch.complex64: torch.complex128}
        return _map_tensors(fn(*args, **kwargs), lambda r: r.to(back[r.dtype]) if r.dtype in back else r)
    dev = next(a.device for a in args if isinstance(a, torch.Tensor))
    args = [a.cpu() if isinstance(a, torch.Tensor) else a for a in args]
    return _map_tensors(fn(*args, **kwargs), lambda r: r.to(dev))


def _map_tensors(res, f):
    if isinstance(res, torch.Tensor):
        return f(res)
    if isinstance(res, tuple) and hasattr(res, "_fields"):
        return type(res)(*[_map_tensors(r, f) for r in res])
    if isinstance(res, (tuple, list)):
        return type(res)(_map_tensors(r, f) for r in res)
    return res


def _np_dt(x):
    if isinstance(x, torch.Tensor):
        return TORCH_TO_NP[x.dtype]
    return x if type(x) in (int, float, complex) else np.dtype(bool) if type(x) is bool else x


def result_dtype(*ops):
    """NumPy 2 result dtype of tensors and Python scalars (weak)."""
    dts = [_np_dt(o) for o in ops]
    if all(isinstance(d, type) for d in dts):
        dts = [np.asarray(o).dtype if not isinstance(o, torch.Tensor) else _np_dt(o) for o in ops]
    return to_dtype(np.result_type(*dts))
