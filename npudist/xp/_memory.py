"""Memory views of an xp array that need only its tensor: ``a.flags``, ``a.data`` and arrays made
over a MemoryPointer (CuPy's ``ndarray(shape, dtype, memptr, strides)``)."""
import torch

from ._dtypes import NP_TO_TORCH, to_dtype
from ._unsigned import as_uint, owns_memory


class Flags:
    """a.flags (matches numpy.ndarray.flags, a snapshot taken when read): C_CONTIGUOUS, F_CONTIGUOUS,
    OWNDATA, WRITEABLE, ALIGNED, WRITEBACKIFCOPY and the derived FNC, FORC, BEHAVED, CARRAY, FARRAY,
    as keys (NumPy's names and one/two-letter abbreviations) and as lower-case attributes.
    c_contiguous, f_contiguous and owndata are read-only as in NumPy (setting them raises
    AttributeError); xp memory is always writeable and aligned."""
    __slots__ = ("_c", "_f", "_o", "writeable")

    def __init__(self, t):
        self._c = t.is_contiguous()
        self._f = t.ndim <= 1 and self._c or t.permute(*range(t.ndim - 1, -1, -1)).is_contiguous()
        self._o = owns_memory(t)
        self.writeable = True

    c_contiguous = property(lambda self: self._c)
    f_contiguous = property(lambda self: self._f)
    owndata = property(lambda self: self._o)
    aligned = property(lambda self: True)
    writebackifcopy = property(lambda self: False)
    fnc = property(lambda self: self._f and not self._c)
    forc = property(lambda self: self._f or self._c)
    behaved = property(lambda self: self.writeable)
    carray = property(lambda self: self.writeable and self._c)
    # NumPy 2's FARRAY is "behaved and not C-contiguous" (it does not look at F_CONTIGUOUS): kept
    farray = property(lambda self: self.writeable and not self._c)

    _KEYS = {"C": "c_contiguous", "CONTIGUOUS": "c_contiguous", "F": "f_contiguous", "FORTRAN": "f_contiguous",
             "O": "owndata", "W": "writeable", "A": "aligned", "X": "writebackifcopy", "B": "behaved",
             "CA": "carray", "FA": "farray"}
    _NAMES = frozenset(("c_contiguous", "f_contiguous", "owndata", "writeable", "aligned", "writebackifcopy",
                        "fnc", "forc", "behaved", "carray", "farray"))

    def __getitem__(self, name):
        key = self._KEYS.get(name, name.lower()) if isinstance(name, str) else None
        if key not in self._NAMES or (name != name.upper() and name not in self._KEYS):
            raise KeyError("Unknown flag")    # (NumPy's message)
        return getattr(self, key)

    def __repr__(self):
        return "\n".join(f"  {n.upper()} : {getattr(self, n)}"
                         for n in ("c_contiguous", "f_contiguous", "owndata", "writeable", "aligned",
                                   "writebackifcopy")) + "\n"    # (NumPy's ends with a newline)


class MemoryPointer:
    """``a.data``: the npu address of an array's first element (``ptr``, as CuPy's MemoryPointer)
    and the npu index (``device_id``). Keeps the tensor alive while held."""
    __slots__ = ("ptr", "device_id", "_owner")

    def __init__(self, t):
        self.ptr = t.data_ptr()
        self.device_id = t.device.index or 0
        self._owner = t

    def __int__(self):
        return self.ptr

    def __repr__(self):
        return f"<xp.MemoryPointer ptr=0x{self.ptr:x} device_id={self.device_id}>"


def view_of_pointer(memptr, shape, dtype, strides, order):
    """The tensor of ``ndarray(shape, dtype, memptr=memptr, strides=strides)`` (as cupy.ndarray's
    constructor): a view of the memory ``memptr`` points into, starting at its address, with
    ``strides`` in bytes (default: contiguous in ``order``). Writes go through to that memory.
    Raises TypeError for a memptr that is not an xp MemoryPointer, ValueError for strides or an
    address that are not multiples of the item size or a view reaching outside the memory, and
    NotImplementedError for negative strides (npu tensors have none)."""
    if not isinstance(memptr, MemoryPointer):
        raise TypeError(f"memptr must be an xp MemoryPointer (a.data, MemoryPool.malloc), not {type(memptr).__name__}")
    tdt = NP_TO_TORCH[to_dtype(dtype)]
    shape = (shape,) if isinstance(shape, int) else tuple(int(n) for n in shape)
    item = torch.empty((), dtype=tdt).element_size()
    storage = memptr._owner.untyped_storage()
    start = memptr.ptr - storage.data_ptr()
    if strides is None:
        strides, step = [0] * len(shape), item
        for ax in (range(len(shape) - 1, -1, -1) if order == "C" else range(len(shape))):
            strides[ax] = step
            step *= max(shape[ax], 1)
    strides = tuple(int(s) for s in strides)
    if len(strides) != len(shape):
        raise ValueError(f"strides {strides} and shape {shape} have different lengths")
    if any(s < 0 for s in strides):
        raise NotImplementedError("ndarray(memptr=..., strides=...) with negative strides: npu tensors have none")
    if start % item or any(s % item for s in strides):
        raise ValueError(f"ndarray(memptr=...): the address offset {start} and strides {strides} must be "
                         f"multiples of the item size {item}")
    end = start + (sum((n - 1) * s for n, s in zip(shape, strides)) + item if all(shape) else 0)
    if end > storage.nbytes():
        raise ValueError(f"ndarray(memptr=...): shape {shape} with strides {strides} reaches byte {end} of a "
                         f"{storage.nbytes()}-byte memory block")
    t = torch.empty(0, dtype=tdt, device=memptr._owner.device)
    t.set_(storage, start // item, shape, tuple(s // item for s in strides))
    return as_uint(t)
