"""The manipulation routines ndarray's methods are made of (reshape, ravel, transpose, swapaxes,
squeeze, repeat, clip, diagonal, trace; matches NumPy's) and copyto (creation's full and full_like
use it), in the core as CuPy keeps them in cupy._core: ``a.reshape(...)`` and
``xp.reshape(a, ...)`` run the same function. The public npudist.xp._manipulation modules
re-export them beside the routines no method needs."""
import math
import operator
import warnings

import numpy as np
import torch

from .. import _host  # NumPy's functions on npu memory first (where measured faster)
from .._convert import as_tensor, is_f_contiguous, normalize_axes, normalize_axis, operand, result_dtype, tensor_of
from .._dtypes import TORCH_TO_NP
from .._negview import strides_of
from .._overlap import unaliased
from .._ufunc_kernels import _INT_TDT
from . import _array, _reductions
from ._array import OPS, result, wrap

_t = tensor_of  # the package's one unwrapping helper

_MAXDIMS = 64       # NumPy 2's NPY_MAXDIMS


def _as_view_of(r, t, a):
    """Wraps r; when r is a view of a's memory its ``base`` is a (NumPy's)."""
    res = wrap(r)
    if _array.is_array(a) and r.numel() and r.data_ptr() == t.data_ptr() or _array.is_array(a) and not r.numel():
        res._b = a
    return res


def _canonical_strides(shape, fortran):
    """NumPy's strides (in elements) of a new array of ``shape`` (zero-length axes count as 1)."""
    strides, s = [0] * len(shape), 1
    for i in (range(len(shape)) if fortran else range(len(shape) - 1, -1, -1)):
        strides[i] = s
        s *= max(shape[i], 1)
    return tuple(strides)


def reshape(a, shape=None, order="C", *, newshape=None, copy=None):
    """Array with the same data and a new shape (matches numpy.reshape: a view when the strides
    allow one, else a copy; ``copy=False`` raises ValueError when a copy is needed, ``copy=True``
    always copies; one unknown dimension (any negative value); NumPy's ValueErrors)."""
    t = _t(a)
    shape = newshape if shape is None else shape
    if isinstance(shape, (int, np.integer)) or hasattr(shape, "__index__") and not isinstance(shape, (tuple, list)):
        shape = (operator.index(shape),)
    shape = tuple(operator.index(s) for s in shape)
    if isinstance(copy, str):
        raise ValueError("strings are not allowed for 'copy' keyword. Use True/False/None instead.")
    order = order.upper() if isinstance(order, str) and len(order) == 1 else order
    if order not in ("C", "F", "A"):
        raise ValueError(f"order {order!r} is not permitted for reshaping")
    if len(shape) > _MAXDIMS:
        raise ValueError(f"maximum supported dimension for an ndarray is currently {_MAXDIMS}, found {len(shape)}")
    unknown = [i for i, s in enumerate(shape) if s < 0]
    if len(unknown) > 1:
        raise ValueError("can only specify one unknown dimension")
    n = t.numel()
    known = math.prod(s for s in shape if s >= 0)
    if unknown:
        if known == 0 or n % known:
            raise ValueError(f"cannot reshape array of size {n} into shape {shape}")
        shape = tuple(n // known if s < 0 else s for s in shape)
    elif known != n:
        raise ValueError(f"cannot reshape array of size {n} into shape {shape}")
    if order == "A":   # F when the array is Fortran- and not C-contiguous (NumPy's rule)
        order = "F" if is_f_contiguous(t) and not t.is_contiguous() else "C"
    if n == 0:
        st = t.stride() if shape == tuple(t.shape) else _canonical_strides(shape, order == "F")
        r = t.as_strided(shape, st)
    else:
        rev = tuple(range(t.ndim - 1, -1, -1))
        src = t.permute(rev) if order == "F" else t
        tgt = shape[::-1] if order == "F" else shape
        try:
            r = src.view(tgt)
        except RuntimeError:
            if copy is False:
                raise ValueError("Unable to avoid creating a copy while reshaping.") from None
            r = src.reshape(tgt)
        if order == "F":
            r = r.permute(tuple(range(len(shape) - 1, -1, -1)))
    if copy and (not n or r.data_ptr() == t.data_ptr()):
        return wrap(r.clone())
    return _as_view_of(r, t, a)


def _memory_order(t):
    """Axes outermost first in memory order, as NumPy's iterator orders them for order='K': an
    insertion sort by absolute stride in which a zero (broadcast) stride decides nothing."""
    st = [abs(x) for x in strides_of(t)]              # (a negative-stride view's own strides)
    axes = list(range(t.ndim - 1, -1, -1))            # innermost first
    for i0 in range(1, len(axes)):
        a0, pos = axes[i0], i0
        for i1 in range(i0 - 1, -1, -1):
            a1 = axes[i1]
            if st[a0] and st[a1]:
                if st[a1] <= st[a0]:
                    break
                pos = i1
        if pos != i0:
            axes.insert(pos, axes.pop(i0))
    return axes[::-1]


def ravel(a, order="C"):
    """Flattened array (matches numpy.ravel: a view when the elements are contiguous in the asked
    order, else a contiguous copy; 'A' and 'K' (memory order, axes by descending stride) too)."""
    t = _t(a)
    o = order.upper() if isinstance(order, str) and len(order) == 1 else order
    if o not in ("C", "F", "A", "K"):
        raise ValueError(f"order must be one of 'C', 'F', 'A', 'K', got {order!r}")
    if o == "A":
        o = "F" if is_f_contiguous(t) and not t.is_contiguous() else "C"
    if o == "K":
        o = "C" if t.is_contiguous() else "F" if is_f_contiguous(t) else "K"
    if o == "C":
        src = t
    elif o == "F":
        src = t.permute(tuple(range(t.ndim - 1, -1, -1)))
    else:
        src = t.permute(_memory_order(t))
    if not src.is_contiguous():
        src = src.contiguous()
    return _as_view_of(src.reshape(-1), t, a)


def transpose(a, axes=None):
    """Permuted axes (matches numpy.transpose; a view)."""
    t = _t(a)
    if axes is None:
        return wrap(t.permute(*range(t.ndim - 1, -1, -1)))
    axes = tuple(normalize_axis(x, t.ndim) for x in axes)
    if len(axes) != t.ndim or len(set(axes)) != t.ndim:
        raise ValueError("axes don't match array")
    return wrap(t.permute(*axes))


def swapaxes(a, axis1, axis2):
    t = _t(a)
    return wrap(t.transpose(normalize_axis(axis1, t.ndim), normalize_axis(axis2, t.ndim)))


def squeeze(a, axis=None):
    """Removes length-1 axes (matches numpy.squeeze)."""
    t = _t(a)
    if axis is None:
        return wrap(t.reshape([s for s in t.shape if s != 1]))
    if t.ndim == 0:
        normalize_axes(axis, 1)                   # NumPy: a 0-d array takes axis 0 / -1 (AxisError otherwise)
        return wrap(t.view(()))
    axes = normalize_axes(axis, t.ndim)
    for ax in axes:
        if t.shape[ax] != 1:
            raise ValueError("cannot select an axis to squeeze out which has size not equal to one")
    return wrap(t.reshape([s for i, s in enumerate(t.shape) if i not in axes]))


def repeat(a, repeats, axis=None):
    """Repeats elements (matches numpy.repeat: ``repeats`` an int or a 0-/1-d sequence or array
    broadcast along ``axis``; arrays must cast to int64 under 'safe' (TypeError for floats and
    uint64, as NumPy); ValueError for negative counts, a length mismatch or more than 1 dim)."""
    t = _t(a)
    if axis is None:
        t, axis = t.reshape(-1), 0
    axis = normalize_axis(axis, t.ndim)
    n = t.shape[axis]
    if isinstance(repeats, (int, np.integer)):
        if repeats < 0:
            raise ValueError("negative dimensions are not allowed")
        return wrap(torch.repeat_interleave(t, int(repeats), dim=axis))
    if _array.is_array(repeats) or isinstance(repeats, torch.Tensor):
        r = _t(repeats)
        if not np.can_cast(TORCH_TO_NP[r.dtype], np.intp, "safe"):
            raise TypeError(f"Cannot cast array data from {TORCH_TO_NP[r.dtype]!r} to dtype('int64') according to "
                            f"the rule 'safe'")
    else:
        r = torch.as_tensor(np.asarray(repeats).astype(np.intp), device=t.device)   # sequences (host data)
    if r.ndim > 1:
        raise ValueError("object too deep for desired array")
    if r.ndim == 1 and r.shape[0] not in (1, n):
        raise ValueError(f"operands could not be broadcast together with shape ({n},) ({r.shape[0]},)")
    r = r.long()
    if r.numel() and bool((r < 0).any()):
        raise ValueError("negative dimensions are not allowed")
    if r.numel() == 1 and (r.ndim == 0 or n != 1):
        r = int(r.reshape(-1)[0])
    return wrap(torch.repeat_interleave(t, r, dim=axis))


@_host.numpy_first(np.clip, _array.array_type)   # NumPy's clip on npu memory first for small arrays (docs/xp.md)
def clip(a, a_min=np._NoValue, a_max=np._NoValue, out=None, *, min=None, max=None, **kwargs):
    """Limits values to [a_min, a_max] (matches numpy.clip; NumPy 2 dtype rules). As NumPy's,
    a_min and a_max go together (TypeError when only one is passed); min=/max= alone are fine."""
    if (a_min is np._NoValue) != (a_max is np._NoValue):
        raise TypeError(f"clip() missing 1 required positional argument: "
                        f"'{'a_min' if a_min is np._NoValue else 'a_max'}' (or pass min=/max= by keyword)")
    if a_min is np._NoValue:
        a_min = a_max = None
    lo = a_min if a_min is not None else min
    hi = a_max if a_max is not None else max
    maximum = OPS["maximum"]
    minimum = OPS["minimum"]
    r = a if _array.is_array(a) else wrap(_t(a))
    if (type(lo) in (int, float, type(None)) and type(hi) in (int, float, type(None)) and (lo is not None or hi is not None)  # noqa: SIM102  - inner test: the 64-bit range
            and not r._t.is_complex() and r._t.dtype != torch.bool
            and result_dtype(r._t, *[v for v in (lo, hi) if v is not None]) == r.dtype):
        if r._t.is_floating_point() or all(v is None or -2**63 <= v < 2**63 for v in (lo, hi)):
            if r._t.dtype in _INT_TDT:
                # NumPy 2: a lower bound below the dtype's range (or an upper one above it) bounds
                # nothing; a lower bound above it (an upper one below it) is OverflowError
                info = torch.iinfo(r._t.dtype)
                if lo is not None and lo < info.min:
                    lo = info.min
                if hi is not None and hi > info.max:
                    hi = info.max
                for v in (lo, hi):
                    if v is not None and not info.min <= v <= info.max:
                        raise OverflowError(f"Python integer {v} out of bounds for {r.dtype}")
            res = torch.clamp(r._t, lo, hi)
            return result(res, out)
    if lo is not None:
        r = maximum(r, lo)
    if hi is not None:
        r = minimum(r, hi)
    if lo is None and hi is None:
        r = wrap(r._t.clone())
    if out is not None:
        out._t.copy_(r._t)
        return out
    return r


def diagonal(a, offset=0, axis1=0, axis2=1):
    """Diagonal view (matches numpy.diagonal)."""
    t = _t(a)
    if t.ndim < 2:
        raise ValueError("diag requires an array of at least two dimensions")
    return wrap(torch.diagonal(t, offset, normalize_axis(axis1, t.ndim), normalize_axis(axis2, t.ndim)))


def trace(a, offset=0, axis1=0, axis2=1, dtype=None, out=None):
    """Sum along diagonals (matches numpy.trace)."""
    return _reductions.sum(diagonal(a, offset, axis1, axis2), axis=-1, dtype=dtype, out=out)


def copyto(dst, src, casting="same_kind", where=True):
    """Copies src into dst with broadcasting (matches numpy.copyto)."""
    o = operand(src)
    if not isinstance(o, torch.Tensor):
        # a Python scalar is weak (NumPy 2): its kind must cast to dst's; ints must fit
        kind = {bool: np.bool_, int: np.int64, float: np.float64, complex: np.complex128}[type(o)]
        kinds = {bool: "biufc", int: "iufc", float: "fc", complex: "c"}[type(o)]
        if casting != "unsafe" and dst.dtype.kind not in kinds:
            raise TypeError(f"Cannot cast scalar from {np.dtype(kind)!r} to {dst.dtype!r} according to the rule "
                            f"{casting!r}")
        if type(o) is int and dst.dtype.kind in "iu" and casting != "unsafe":
            info = np.iinfo(dst.dtype)
            if not info.min <= o <= info.max:
                raise OverflowError(f"Python integer {o} out of bounds for {dst.dtype}")
    if isinstance(o, torch.Tensor):
        st = o
    elif type(o) in (float, complex) and dst.dtype.kind in "iub":
        # NumPy's unsafe float -> integer cast of the scalar (torch.tensor refuses floats for uint64)
        v = o.real if type(o) is complex else o
        st = as_tensor(np.asarray(v).astype(dst.dtype)).to(dst._t.device)
    else:
        st = torch.tensor(o.real if type(o) is complex and not dst._t.is_complex() else o, dtype=dst._t.dtype,
                          device=dst._t.device)
    if casting != "unsafe" and isinstance(o, torch.Tensor) and not np.can_cast(TORCH_TO_NP[st.dtype], dst.dtype, casting):
        raise TypeError(f"Cannot cast array data from {TORCH_TO_NP[st.dtype]} to {dst.dtype} according to the rule "
                        f"{casting!r}")
    if (st.is_complex() or type(o) is complex) and not dst._t.is_complex():
        # NumPy's unsafe complex -> real cast (PyTorch's would warn a UserWarning instead)
        warnings.warn("Casting complex values to real discards the imaginary part", np.exceptions.ComplexWarning,
                      stacklevel=2)
        st = st.real if st.is_complex() else st
    while st.ndim > dst._t.ndim and st.shape[0] == 1:
        st = st[0]                                # NumPy drops leading length-1 axes of src
    try:
        st = st.to(dst._t.dtype).broadcast_to(dst._t.shape)
    except RuntimeError:
        raise ValueError(f"could not broadcast input array from shape {tuple(st.shape)} into shape "
                         f"{tuple(dst._t.shape)}") from None
    st = unaliased(st, dst._t)     # NumPy copies an overlapping source first
    if where is True:
        dst._t.copy_(st)
    else:
        if type(where) in (int, float, complex):
            where = bool(where)                   # a Python scalar is weak: any value casts to bool
        w = _t(where)
        if w.dtype != torch.bool:                 # NumPy casts a where= array to bool with the 'safe' rule
            raise TypeError(f"Cannot cast array data from {TORCH_TO_NP[w.dtype]!r} to dtype('bool') according "
                            f"to the rule 'safe'")
        try:
            w = w.broadcast_to(dst._t.shape)
        except RuntimeError:
            raise ValueError(f"could not broadcast where mask from shape {tuple(w.shape)} into shape "
                             f"{tuple(dst._t.shape)}") from None
        dst._t.copy_(torch.where(w, st, dst._t))
