"""Matrix products (match numpy.matmul and numpy.dot): the functions behind ``a @ b`` and
``a.dot(b)`` and behind ``xp.matmul`` / ``xp.dot`` (npudist.xp.linalg re-exports them), in the core
as cupy._core's matmul and dot are."""
import numpy as np
import torch

from .. import _host
from .._convert import f64, normalize_axis
from .._convert import tensor_of as _t
from .._dtypes import NP_TO_TORCH, TORCH_TO_NP, complex_to_real, to_dtype
from . import _array
from ._array import result, wrap


def _pair(a, b, name):
    at, bt = _t(a), _t(b)
    dt = to_dtype(np.result_type(TORCH_TO_NP[at.dtype], TORCH_TO_NP[bt.dtype]))
    tdt = NP_TO_TORCH[dt]
    return at.to(tdt), bt.to(tdt)


def _bool_aware(fn, *ts):
    if ts[0].dtype == torch.bool:
        return fn(*[t.to(torch.int64) for t in ts]) != 0
    return f64(fn, *ts)


def _shape_str(shape):
    """A shape as NumPy prints it in error messages: (5,6), (3,)."""
    return str(tuple(shape)).replace(" ", "")


@_host.numpy_first(np.matmul, _array.array_type, big=True)   # NumPy's BLAS on npu memory first (docs/xp.md)
def matmul(x1, x2, /, out=None, *, casting="same_kind", order="K", dtype=None, subok=True, axes=None, axis=None):
    """Matrix product with broadcasting (matches numpy.matmul, a gufunc ``(n,k),(k,m)->(n,m)``):
    1-D operands promoted and the added axis removed; ``axes=[(i, j), (k, l), (p, q)]`` picks the
    core axes of each operand and of the result; ``dtype=`` the computation dtype; ``out=`` takes
    the result's shape, cast with ``casting`` (TypeError where NumPy's UFuncTypeError is raised).
    ValueError for 0-d operands, a core-dimension mismatch and batch shapes that do not broadcast."""
    a, b = _pair(x1, x2, "matmul")
    if dtype is not None:
        tdt = NP_TO_TORCH[to_dtype(dtype)]
        for i, t in enumerate((a, b)):
            src, dst = TORCH_TO_NP[t.dtype], TORCH_TO_NP[tdt]
            if casting != "unsafe" and not np.can_cast(src, dst, casting):
                raise TypeError(f"Cannot cast ufunc 'matmul' input {i} from dtype('{src}') to dtype('{dst}') with "
                                f"casting rule '{casting}'")
        a, b = a.to(tdt), b.to(tdt)
    if a.ndim == 0 or b.ndim == 0:
        raise ValueError("matmul: Input operand does not have enough dimensions (use * for scalars)")
    if axis is not None:
        if axes is not None:
            raise TypeError("matmul: cannot specify both 'axis' and 'axes'")
        raise TypeError("matmul: 'axis' is for gufuncs with one core dimension; use 'axes'")
    if axes is not None:
        axes = list(axes)
        if len(axes) != 3:
            raise ValueError(f"matmul: axes should be a list with an entry for all 3 inputs and outputs; "
                             f"got {len(axes)} entries")
        a, b = _core_axes_last(a, axes[0], "input 0"), _core_axes_last(b, axes[1], "input 1")
    if a.shape[-1] != b.shape[-2 if b.ndim > 1 else 0]:
        raise ValueError(f"matmul: Input operand 1 has a mismatch in its core dimension 0 (size {b.shape[-2 if b.ndim > 1 else 0]} "
                         f"is different from {a.shape[-1]})")
    try:
        torch.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    except RuntimeError:
        raise ValueError(f"operands could not be broadcast together with remapped shapes [original->remapped]: "
                         f"{tuple(a.shape)} and {tuple(b.shape)} (matmul's batch dimensions)") from None
    r = _bool_aware(torch.matmul, a, b)
    if axes is not None:
        core = 2 if a.ndim > 1 and b.ndim > 1 else (1 if a.ndim > 1 or b.ndim > 1 else 0)
        if core:
            src = (-2, -1) if core == 2 else (-1,)
            dst = _core_tuple(axes[2], core, r.ndim, "output")
            r = torch.movedim(r, src, dst)
    if out is None:
        return wrap(r)
    if isinstance(out, tuple):
        if len(out) != 1:
            raise ValueError(f"out must be a tuple of 1 array for matmul, got {len(out)}")
        out = out[0]
    if not isinstance(out, _array.ARRAY):
        raise TypeError(f"out must be an xp.ndarray, got {type(out).__name__}")
    src, dst = TORCH_TO_NP[r.dtype], out.dtype
    if casting != "unsafe" and not np.can_cast(src, dst, casting):
        raise TypeError(f"Cannot cast ufunc 'matmul' output from dtype('{src}') to dtype('{dst}') with casting rule "
                        f"'{casting}'")
    if tuple(out.shape) != tuple(r.shape):
        raise ValueError(f"matmul: output operand has shape {tuple(out.shape)}, the result has {tuple(r.shape)}")
    out._t.copy_(complex_to_real(r, out._t.dtype, stacklevel=2))
    return out


def _core_tuple(spec, core, ndim, what):
    """An ``axes=`` item as a tuple of axes; NumPy's AxisError/TypeError for a wrong item (what:
    "input 0", "input 1" or "output", NumPy's operand 0, 1, 2)."""
    op = {"input 0": 0, "input 1": 1}.get(what, 2)
    if isinstance(spec, (int, np.integer)):
        if core != 1:
            raise np.exceptions.AxisError(f"matmul: operand {op} has {core} core dimensions, but the axes item "
                                          f"is a single integer.")
        spec = (spec,)
    elif not isinstance(spec, tuple):
        raise TypeError(f"matmul: axes item {op} should be a tuple.")
    if len(spec) != core:
        raise np.exceptions.AxisError(f"matmul: operand {op} has {core} core dimensions, but {len(spec)} dimensions "
                                      f"are specified by axes tuple.")
    return tuple(normalize_axis(ax, ndim) for ax in spec)


def _core_axes_last(t, spec, what):
    core = 2 if t.ndim > 1 else 1
    return torch.movedim(t, _core_tuple(spec, core, t.ndim, what), (-2, -1) if core == 2 else (-1,))


def dot(a, b, out=None):
    """Dot product (matches numpy.dot: inner for 1-D, matmul for 2-D, sum over a's last and b's
    second-to-last axis otherwise)."""
    at, bt = _pair(a, b, "dot")
    if at.ndim and bt.ndim:
        k = bt.shape[-2] if bt.ndim >= 2 else bt.shape[0]
        if at.shape[-1] != k:   # NumPy's error class and message (PyTorch raises RuntimeError)
            raise ValueError(f"shapes {_shape_str(at.shape)} and {_shape_str(bt.shape)} not aligned: "
                             f"{at.shape[-1]} (dim {at.ndim - 1}) != {k} (dim {max(bt.ndim - 2, 0)})")
    if at.ndim == 0 or bt.ndim == 0:
        r = _bool_aware(torch.mul, at, bt) if at.dtype != torch.bool else at & bt
    elif bt.ndim == 1 or at.ndim <= 2 and bt.ndim <= 2:
        r = _bool_aware(torch.matmul, at, bt)
    else:
        r = _bool_aware(lambda x, y: torch.tensordot(x, y, dims=([x.ndim - 1], [y.ndim - 2])), at, bt)
    # NumPy's dot writes only into an exact match: the result's dtype and shape, C-contiguous
    if out is not None and (not isinstance(out, _array.ARRAY) or out._t.dtype != r.dtype
                            or tuple(out.shape) != tuple(r.shape) or not out._t.is_contiguous()):
        raise ValueError("output array is not acceptable (must have the right datatype, number of "
                         "dimensions, and be a C-Array)")
    return result(r, out)
