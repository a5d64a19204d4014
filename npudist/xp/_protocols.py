"""NumPy's and DLPack's interchange protocols of xp.ndarray: NEP 13 (``__array_ufunc__``) and the
DLPack export (``__dlpack__``), NEP 13's operator rule for foreign operands, and pickling to a file (``dump``). Core module (tests/xp/test_structure.py): it imports nothing above
npudist.xp._core; xp's ufuncs are found at call time in the package's namespace."""
import pickle
import sys

import numpy as np
import torch

from ._convert import ArrayBase
from ._negview import NegStrided
from ._unsigned import plain


def array_ufunc(ufunc, method, inputs, kwargs):
    """NEP 13, as cupy.ndarray's: a NumPy ufunc given an xp array (``numpy.sin(a)``,
    ``numpy.add.reduce(a, axis=-1)``, ``numpy.add.at(a, i, b)``, ``numpy.matmul(a, b)``, and NumPy's
    operators ``np_array + a``) runs xp's ufunc of the same name and method, returning xp arrays.
    NotImplemented (NumPy then raises TypeError) where xp has no such ufunc or method, or an ``out=``
    array is not an xp array."""
    fn = getattr(sys.modules[__package__], ufunc.__name__, None)
    if fn is not None and method != "__call__":
        fn = getattr(fn, method, None)
    if fn is None:
        return NotImplemented
    out = kwargs.get("out")
    if out is not None:
        if any(o is not None and not isinstance(o, ArrayBase) for o in out):
            return NotImplemented
        if len(out) == 1:
            kwargs["out"] = out[0]
    return fn(*inputs, **kwargs)


def dlpack_export(t, own_device, max_version, dl_device, copy):
    """The DLPack capsule of npu tensor ``t`` (an xp array's memory; ``own_device`` its
    ``__dlpack_device__``): consumers (torch.from_dlpack) get an npu tensor over the same memory.
    Made by the tensor's own exporter, so torch's __dlpack_device__ (which rejects the renamed
    PrivateUse1 device in torch 2.13) is never consulted. A negative-stride view exports a copy
    (BufferError with copy=False); ``dl_device=(1, 0)`` exports a host copy; any other device, or the
    host with copy=False, raises BufferError."""
    if type(t) is NegStrided:
        # DLPack (and torch) strides cannot be negative: a negative-stride view exports a copy
        if copy is False:
            raise BufferError("a negative-stride view (a[::-1], flip) cannot be exported without a copy "
                              "(DLPack consumers take no negative strides); pass copy=None or True")
        t = t.clone()
    if dl_device is not None and tuple(dl_device) != own_device:
        if tuple(dl_device)[0] != 1 or copy is False:
            raise BufferError(f"xp arrays export to their own device {own_device} or, copying, to "
                              f"the host (1, 0); not {tuple(dl_device)} with copy={copy}")
        t = t.cpu()  # a host copy, as the standard allows for another device
    elif copy:
        t = t.clone()
    if t.is_conj() or t.is_neg():
        t = t.resolve_conj().resolve_neg()
    t = plain(t)
    if max_version is not None and tuple(max_version) >= (1, 0):
        return t.__dlpack__(max_version=tuple(max_version))
    return torch.utils.dlpack.to_dlpack(t)


def dump(a, file):
    """Pickles ``a`` into ``file``, a path or a binary file object (matches numpy.ndarray.dump;
    ``xp.load(file, allow_pickle=True)`` reads it back)."""
    if isinstance(file, (str, bytes)) or hasattr(file, "__fspath__"):
        with open(file, "wb") as f:
            pickle.dump(a, f, protocol=2)
    else:
        pickle.dump(a, file, protocol=2)


NO_OVERRIDE = object()
_OWN_OPERANDS = (ArrayBase, np.ndarray, np.generic, int, float, complex, bool)


def nep13_override(other, np_ufunc, args):
    """NEP 13's operator rule for a binary operator of ndarray with operand ``other`` (as
    numpy.ndarray's and cupy.ndarray's): NotImplemented when other's type sets ``__array_ufunc__ =
    None`` (Python then asks its reflected method); other's ``__array_ufunc__(np_ufunc, "__call__",
    *args)`` when it defines its own; NO_OVERRIDE otherwise (arrays, scalars, plain objects)."""
    if isinstance(other, _OWN_OPERANDS):
        return NO_OVERRIDE
    override = getattr(type(other), "__array_ufunc__", NO_OVERRIDE)
    if override is None:
        return NotImplemented
    if override is NO_OVERRIDE:
        return NO_OVERRIDE
    return other.__array_ufunc__(np_ufunc, "__call__", *args)
