"""Memory views of an xp array that need only its tensor: ``a.flags``, ``a.data`` and arrays made
over a MemoryPointer (CuPy's ``ndarray(shape, dtype, memptr, strides)``)."""
import torch

from ._dtypes import NP_TO_TORCH, to_dtype
from ._unsigned import as_uint, owns_memory


class Flags:
    """a.flags: C_CONTIGUOUS, F_CONTIGUOUS, OWNDATA, WRITEABLE (also as attributes, lower case)."""

    def __init__(self, t):
        self.c_contiguous = t.is_contiguous()
        self.f_contiguous = t.ndim <= 1 and self.c_contiguous or t.permute(*range(t.ndim - 1, -1, -1)).is_contiguous()
        self.owndata = owns_memory(t)
        self.writeable = True
        self.aligned = True

    def __getitem__(self, name):
        key = {"C": "c_contiguous", "F": "f_contiguous", "CONTIGUOUS": "c_contiguous",
               "FORTRAN": "f_contiguous"}.get(name, name.lower())
        try:
            return getattr(self, key)
        except AttributeError:
            raise KeyError(f"unknown flag {name!r}") from None

    def __repr__(self):
        return "\n".join(f"  {n.upper()} : {getattr(self, n)}"
                         for n in ("c_contiguous", "f_contiguous", "owndata", "writeable", "aligned"))


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
