"""Memory views of an xp array that need only its tensor: ``a.flags`` and ``a.data``."""

from ._unsigned import owns_memory


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
