"""The Array API standard namespace of npudist.xp (``x.__array_namespace__()``).

It is npudist.xp with the standard's signatures where NumPy's differ, dtypes as numpy.dtype
instances, and all the standard's dtypes: bool, int8..int64, uint8..uint64, float32, float64,
complex64, complex128 (uint16/32/64 computed exactly, see npudist.xp._unsigned).
"""
import sys
import types

import numpy as np
import torch

from ._config import device
from ._core import _namespace
from ._core._namespace import API_VERSION
from ._misc import isdtype

DTYPE_NAMES = ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float32", "float64",
               "complex64", "complex128")
LEFT_OUT = ()

_FUNCS = ["arange", "asarray", "empty", "empty_like", "eye", "from_dlpack", "full", "full_like", "linspace", "meshgrid", "ones", "ones_like", "tril", "triu", "zeros", "zeros_like", "can_cast", "finfo", "iinfo", "isdtype", "result_type", "abs", "acos", "acosh", "add", "asin", "asinh", "atan", "atan2", "atanh", "bitwise_and", "bitwise_left_shift", "bitwise_invert", "bitwise_or", "bitwise_right_shift", "bitwise_xor", "ceil", "conj", "copysign", "cos", "cosh", "divide", "equal", "exp", "expm1", "floor", "floor_divide", "greater", "greater_equal", "hypot", "imag", "isfinite", "isinf", "isnan", "less", "less_equal", "log", "log1p", "log2", "log10", "logaddexp", "logical_and", "logical_not", "logical_or", "logical_xor", "maximum", "minimum", "multiply", "negative", "nextafter", "not_equal", "positive", "pow", "real", "reciprocal", "remainder", "round", "sign", "signbit", "sin", "sinh", "square", "sqrt", "subtract", "tan", "tanh", "trunc", "take", "take_along_axis", "broadcast_to", "concat", "expand_dims", "flip", "moveaxis", "permute_dims", "repeat", "reshape", "roll", "squeeze", "stack", "tile", "unstack", "matmul", "matrix_transpose", "tensordot", "vecdot", "argmax", "argmin", "count_nonzero", "nonzero", "searchsorted", "where", "unique_all", "unique_counts", "unique_inverse", "unique_values", "argsort", "sort", "cumulative_prod", "cumulative_sum", "max", "mean", "min", "prod", "std", "sum", "var", "all", "any", "diff"]


class _Info:
    """Array API inspection object (``xp.__array_namespace_info__()``)."""

    def capabilities(self):
        return {"boolean indexing": True, "data-dependent shapes": True, "max dimensions": 64}

    def default_device(self):
        return device()

    def devices(self):
        return [torch.device("npu", i) for i in range(torch.npu.device_count())]

    def default_dtypes(self, *, device=None):
        return {"real floating": np.dtype(np.float64), "complex floating": np.dtype(np.complex128),
                "integral": np.dtype(np.int64), "indexing": np.dtype(np.int64)}

    def dtypes(self, *, device=None, kind=None):
        out = {n: np.dtype(n) for n in DTYPE_NAMES}
        if kind is None:
            return out
        return {n: d for n, d in out.items() if isdtype(d, kind)}


def _build():
    xp = sys.modules["npudist.xp"]
    ns = types.ModuleType("npudist.xp.array_api", __doc__)
    for name in _FUNCS:
        setattr(ns, name, getattr(xp, name))
    for name in DTYPE_NAMES:
        setattr(ns, name, np.dtype(name))
    ns.e, ns.pi, ns.inf, ns.nan, ns.newaxis = np.e, np.pi, np.inf, np.nan, None
    ns.__array_api_version__ = API_VERSION
    ns.__array_namespace_info__ = _Info
    ns.linalg = xp.linalg
    ns.fft = xp.fft
    ns.ndarray = xp.ndarray

    def astype(x, dtype, /, *, copy=True, device=None):
        r = xp.asarray(x).astype(dtype, copy=copy)
        return r.to_device(device) if device is not None and r.device != device else r

    def clip(x, /, min=None, max=None):
        x = xp.asarray(x)
        r = xp.clip(x, min, max)
        return r if r.dtype == x.dtype else r.astype(x.dtype)

    def meshgrid(*arrays, indexing="xy"):
        return list(xp.meshgrid(*arrays, indexing=indexing))

    def broadcast_arrays(*arrays):
        return list(xp.broadcast_arrays(*arrays))

    class finfo_object:
        def __init__(self, dtype):
            fi = xp.finfo(dtype)
            self.bits, self.eps, self.max, self.min = int(fi.bits), float(fi.eps), float(fi.max), float(fi.min)
            self.smallest_normal = float(fi.smallest_normal)
            self.dtype = np.dtype(fi.dtype)

    class iinfo_object:
        def __init__(self, dtype):
            ii = xp.iinfo(dtype)
            self.bits, self.max, self.min, self.dtype = int(ii.bits), int(ii.max), int(ii.min), np.dtype(ii.dtype)

    ns.finfo = finfo_object
    ns.iinfo = iinfo_object
    ns.astype = astype
    ns.clip = clip
    ns.meshgrid = meshgrid
    ns.broadcast_arrays = broadcast_arrays
    return ns


_NS = None


def namespace(api_version=None):
    """The namespace module, built on the first call and registered with the core (what
    ``x.__array_namespace__()`` returns); api_version must be None or a version this namespace
    implements (ValueError otherwise)."""
    global _NS
    _namespace.check_version(api_version)
    if _NS is None:
        _NS = _build()
        sys.modules.setdefault("npudist.xp.array_api", _NS)
        _namespace.register(_NS)
    return _NS
