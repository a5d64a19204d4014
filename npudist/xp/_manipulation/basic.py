"""Basic operations: copyto, clip, diagonal, trace (matches NumPy's)."""
import warnings

import numpy as np
import torch

from .. import _host
from .._core import OPS, as_tensor, ndarray, normalize_axis, operand, result, result_dtype, tensor_of, wrap
from .._dtypes import TORCH_TO_NP
from .._overlap import unaliased
from .._reductions import sum as _sum
from .._ufunc_kernels import _INT_TDT

_t = tensor_of  # the package's one unwrapping helper


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


@_host.numpy_first(np.clip, ndarray)   # NumPy's clip on npu memory first for small arrays (docs/xp.md)
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
    r = a if isinstance(a, ndarray) else wrap(_t(a))
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
    return _sum(diagonal(a, offset, axis1, axis2), axis=-1, dtype=dtype, out=out)
