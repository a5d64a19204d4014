"""Parameter lists of user kernels in CuPy's syntax, and the type decision of a call.

``"T x, raw T y, float32 alpha"``: each parameter is ``[raw] TYPE NAME``; TYPE is one letter (a
type placeholder, bound at call time to the dtype of the array passed for it) or a NumPy dtype
name (``float32``, ``int64``, ``bool``, ``complex128`` ... written as NumPy names it). As in CuPy,
arrays must have exactly the declared dtype (no casting: ``TypeError: Type is mismatched``);
scalars are converted to the parameter's type.
"""
from __future__ import annotations

import numpy as np

# C++ names of the dtypes in generated code (float16 is GCC's _Float16, see _runtime)
CTYPES = {
    np.dtype(np.bool_): "bool", np.dtype(np.int8): "signed char", np.dtype(np.uint8): "unsigned char",
    np.dtype(np.int16): "short", np.dtype(np.uint16): "unsigned short", np.dtype(np.int32): "int",
    np.dtype(np.uint32): "unsigned int", np.dtype(np.int64): "long long", np.dtype(np.uint64): "unsigned long long",
    np.dtype(np.float16): "float16", np.dtype(np.float32): "float", np.dtype(np.float64): "double",
    np.dtype(np.complex64): "complex<float>", np.dtype(np.complex128): "complex<double>",
}
RESERVED_ELEMENTWISE = frozenset({"i", "_ind", "_args", "_meta", "_n"})
RESERVED_REDUCTION = frozenset({"_in_ind", "_out_ind", "_s", "_a", "_t", "_c", "_id", "_first", "_args", "_meta",
                                "_type_reduce"})


class ParameterInfo:
    """One parameter: ``name``, ``ctype`` (placeholder letter or C++ type), ``dtype`` (numpy.dtype
    for a concrete type, None for a placeholder), ``raw``, ``is_const`` (inputs)."""
    __slots__ = ("name", "ctype", "dtype", "raw", "is_const")

    def __init__(self, text, is_const):
        words = text.split()
        if len(words) < 2:
            raise ValueError(f"kernel parameter {text.strip()!r}: syntax error; write '[raw] TYPE NAME' "
                             f"(e.g. 'T x', 'raw float32 y')")
        typ, self.name = words[-2], words[-1]
        if not self.name.isidentifier():
            raise ValueError(f"kernel parameter {text.strip()!r}: {self.name!r} is not a C identifier")
        self.raw = False
        self.is_const = is_const
        for w in words[:-2]:
            if w == "raw":
                self.raw = True
            elif w == "_non_const":
                self.is_const = False
            else:
                raise ValueError(f"kernel parameter {text.strip()!r}: unknown keyword {w!r} (only 'raw')")
        if len(typ) == 1:
            if not typ.isalpha():
                raise ValueError(f"kernel parameter {text.strip()!r}: type placeholder must be a letter")
            self.ctype, self.dtype = typ, None
        else:
            try:
                dt = np.dtype(typ)
            except TypeError:
                dt = None
            if dt is None or dt.name != typ or dt not in CTYPES:
                raise ValueError(f"kernel parameter {text.strip()!r}: wrong type {typ!r}; use a one-letter type "
                                 f"placeholder or a NumPy dtype name ({', '.join(d.name for d in CTYPES)})")
            self.dtype, self.ctype = dt, CTYPES[dt]

    def __repr__(self):
        return f"<ParameterInfo {'raw ' if self.raw else ''}{self.ctype} {self.name}>"


def parse_params(text, is_const):
    """'T x, raw T y' -> tuple of ParameterInfo (empty string -> ())."""
    if isinstance(text, (tuple, list)):
        text = ",".join(text)
    parts = [p for p in (s.strip() for s in text.split(",")) if p]
    return tuple(ParameterInfo(p, is_const) for p in parts)


def check_names(in_params, out_params, reserved):
    names = [p.name for p in in_params + out_params]
    for n in names:
        if n in reserved:
            raise ValueError(f"Can not use {n!r} as a parameter name (a name the generated code defines)")
    dup = {n for n in names if names.count(n) > 1}
    if dup:
        raise ValueError(f"duplicate kernel parameter name(s): {', '.join(sorted(dup))}")


def decide_types(in_params, out_params, in_dtypes, out_dtypes):
    """CuPy's type decision. ``in_dtypes``: numpy.dtype of each input array, None for a scalar;
    ``out_dtypes``: dtypes of the given output arrays, or () when outputs are allocated.
    Returns (in_types, out_types, type_map) with type_map a sorted tuple of (letter, dtype).

    Raises TypeError "Type is mismatched" when an array's dtype is not its parameter's (or a
    placeholder is bound to two dtypes), and when a placeholder is bound by no array."""
    bound = {}

    def bind(p, a):
        if p.dtype is not None:
            if a != p.dtype:
                raise TypeError(f"Type is mismatched. {p.name} {a} {p.dtype} (kernel arrays must have the "
                                f"parameter's dtype exactly; cast with .astype first)")
        elif p.ctype in bound:
            if bound[p.ctype] != a:
                raise TypeError(f"Type is mismatched. {p.name} {a} {bound[p.ctype]} {p.ctype} (placeholder "
                                f"{p.ctype} is already {bound[p.ctype]})")
        else:
            bound[p.ctype] = a

    if out_dtypes:
        for p, a in zip(out_params, out_dtypes):
            bind(p, a)
    for p, a in zip(in_params, in_dtypes):
        if a is not None:
            bind(p, a)

    def typ(p):
        if p.dtype is not None:
            return p.dtype
        try:
            return bound[p.ctype]
        except KeyError:
            raise TypeError(f"cannot decide type placeholder {p.ctype} of parameter {p.name!r}: no array argument "
                            f"has it (scalars do not bind placeholders, as in CuPy); pass an array for it or "
                            f"an output array") from None

    return tuple(typ(p) for p in in_params), tuple(typ(p) for p in out_params), tuple(sorted(bound.items()))
