"""Memory views of an xp array that need only its tensor: ``a.flags`` and ``a.data``."""

from ._unsigned import owns_memory


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
