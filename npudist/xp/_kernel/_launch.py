"""Arguments of a user-kernel call: arrays, scalars, broadcasting, dimension merging, and running
a compiled kernel on npu buffers in stream order.

npu memory is host memory, so a kernel gets the arrays' ``data_ptr()`` s and strides directly (no
copy, any strided layout). Before it runs, the calling thread makes the same check every eager
npu op makes (``npudist._C._wait_current_stream``): work the current stream was made to wait
for (a collective, an event of another stream) completes first, so the kernel sees its results.
The kernel runs synchronously on the calling thread (the execution model of the simulated npu),
with the GIL released.
"""
from __future__ import annotations

import ctypes

import numpy as np
import torch

from npudist import _C

from .._core import ndarray, wrap
from .._device import check_devices, current_device_id
from .._dtypes import NP_TO_TORCH, TORCH_TO_NP

_PY_SCALARS = (bool, int, float, complex, np.generic)


class Arg:
    """One argument of a call: kind 'array' / 'raw' / 'scalar'; for arrays the tensor, dtype,
    shape and strides (elements); for scalars the value."""
    __slots__ = ("kind", "tensor", "dtype", "shape", "strides", "value", "array")

    def __init__(self, kind, tensor=None, dtype=None, value=None, array=None):
        self.kind = kind
        self.tensor = tensor
        self.dtype = dtype
        self.value = value
        self.array = array
        if tensor is not None:
            self.shape = tuple(tensor.shape)
            self.strides = tuple(tensor.stride())


def classify(args, params, what):
    """xp arrays / npu tensors -> array args (raw per parameter), scalars -> scalar args.
    Raises TypeError for anything else (NumPy arrays must be moved to the npu first)."""
    out = []
    for a, p in zip(args, params):
        if isinstance(a, ndarray):
            t = a._t
            arr = a
            if getattr(type(t), "_xp_keeps_class", False):
                raise TypeError(f"{what}: argument {p.name!r} is a negative-stride view (a[::-1], xp.flip); kernels "
                                f"take positive strides: pass xp.ascontiguousarray(x) (a copy), and for an output "
                                f"write the result back with x[...] = out")
        elif isinstance(a, torch.Tensor):
            if a.device.type != "npu":
                raise TypeError(f"{what}: argument {p.name!r} is a {a.device.type} tensor; kernel arguments live "
                                f"on the npu (xp.asarray(t) or t.npu())")
            t, arr = a, None
        elif isinstance(a, _PY_SCALARS) or (isinstance(a, np.ndarray) and a.ndim == 0):
            if p.raw:
                raise TypeError(f"{what}: raw parameter {p.name!r} needs an array, got a scalar")
            out.append(Arg("scalar", value=a))
            continue
        else:
            raise TypeError(f"{what}: unsupported type {type(a).__name__} for parameter {p.name!r} (xp arrays, "
                            f"npu tensors and scalars are accepted; copy NumPy arrays with xp.asarray)")
        out.append(Arg("raw" if p.raw else "array", tensor=t, dtype=TORCH_TO_NP[t.dtype], array=arr))
    check_devices([x.tensor for x in out if x.tensor is not None], current_device_id())
    return out


def broadcast_shape(arrays):
    try:
        return tuple(np.broadcast_shapes(*[a.shape for a in arrays]))
    except ValueError:
        shapes = " ".join(str(a.shape) for a in arrays)
        raise ValueError(f"operands could not be broadcast together with shapes {shapes}") from None


def broadcast_strides(arg, shape):
    """Element strides of ``arg`` viewed with the broadcast ``shape`` (0 on broadcast axes)."""
    nd = len(shape)
    pad = nd - len(arg.shape)
    st = [0] * pad
    for s, n in zip(arg.strides, arg.shape):
        st.append(0 if n == 1 else s)
    return st


def merge_dims(shape, stride_lists):
    """Drops size-1 axes and merges neighbours that every array walks contiguously (CuPy's
    reduce_dims). Returns (shape, stride_lists), at least one axis."""
    dims = [d for d, n in enumerate(shape) if n != 1]
    new_shape = [shape[d] for d in dims]
    new_st = [[st[d] for d in dims] for st in stride_lists]
    k = len(new_shape) - 1
    while k > 0:
        n1 = new_shape[k]
        if all(st[k - 1] == st[k] * n1 for st in new_st):
            new_shape[k - 1] *= n1
            del new_shape[k]
            for st in new_st:
                st[k - 1] = st[k]
                del st[k]
        k -= 1
    if not new_shape:
        return [1], [[0] for _ in stride_lists]
    return new_shape, new_st


def raw_meta(arg):
    """CArray meta of a raw argument: shape, then strides in bytes; and its C-contiguity."""
    item = arg.tensor.element_size()
    return list(arg.shape) + [s * item for s in arg.strides], arg.tensor.is_contiguous()


def scalar_buffer(value, dtype, name):
    """A 0-d NumPy array holding the scalar converted to the parameter's dtype (its buffer is
    passed to the kernel). Out-of-range Python ints raise OverflowError (NumPy 2's rule)."""
    try:
        return np.asarray(np.asarray(value).astype(dtype, casting="unsafe") if isinstance(value, np.generic)
                          else np.array(value, dtype=dtype))
    except OverflowError as e:
        raise OverflowError(f"kernel scalar {name!r}: {e}") from None


def pointers_and_raw_meta(cargs, types, params, meta):
    """The kernel's argument pointers: scalar arguments as ``types``-typed host buffers (kept in
    the returned ``keep`` list for the call), arrays by data pointer; for each ``raw`` argument
    its shape/strides are appended to ``meta`` (in place). Returns (ptrs, keep, raw_offsets),
    raw_offsets[k] = (offset in meta, ndim, contiguous)."""
    raw_offsets, ptrs, keep = {}, [], []
    for k, (a, t) in enumerate(zip(cargs, types)):
        if a.kind == "scalar":
            buf = scalar_buffer(a.value, t, params[k].name)
            keep.append(buf)
            ptrs.append(buf.ctypes.data)
            continue
        ptrs.append(a.tensor.data_ptr())
        if a.kind == "raw":
            m, contig = raw_meta(a)
            raw_offsets[k] = (len(meta), a.tensor.dim(), contig)
            meta += m
    return ptrs, keep, raw_offsets


def new_output(shape, dtype, device_id):
    return wrap(torch.empty(shape, dtype=NP_TO_TORCH[dtype], device=torch.device("npu", device_id)))


def run(lib, ptrs, meta, device_id, keep):
    """Calls the kernel entry point of ``lib`` after the current stream's pending work; ``keep``
    holds the buffers (scalars) alive for the call."""
    run_fn(lib.npudist_xp_kernel, ptrs, (ctypes.c_int64 * max(1, len(meta)))(*meta), device_id, keep)


def run_fn(fn, ptrs, m, device_id, keep):
    """``run`` with the entry point and a ctypes int64 array of meta already made."""
    if _C._any_capture() and torch.npu.is_current_stream_capturing():
        raise RuntimeError("npudist.xp user kernels cannot be captured in an npu graph (they run outside the "
                           "dispatcher); run them outside the capture, or express the step with xp/torch ops")
    p = (ctypes.c_void_p * len(ptrs))(*ptrs)
    _C._wait_current_stream(device_id)
    fn(p, m)
    del keep
