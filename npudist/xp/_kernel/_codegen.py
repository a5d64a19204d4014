"""C++ source of user kernels: the parts shared by elementwise and reduction kernels.

A kernel's entry point is ``extern "C" void npudist_xp_kernel(void* const* args, const int64_t*
meta)``: ``args`` holds one pointer per parameter (array data, or the buffer of a scalar);
``meta`` the loop sizes and strides (elements for loop arrays, bytes for raw CArrays). User code
is fenced with ``#line`` directives naming the part it came from.
"""
from __future__ import annotations

from ._params import CTYPES


class Source:
    """Lines of generated code; user code goes in with ``user(label, text)``."""

    def __init__(self):
        self.lines = []

    def add(self, *lines):
        for text in lines:
            self.lines.extend(text.split("\n"))

    def user(self, label, text, wrap=None):
        """User text, reported by the compiler as ``label:LINE``; ``wrap`` ('{}' placeholder) puts
        it inside generated code on its first line."""
        text = text if wrap is None else wrap.replace("{}", text)
        self.add(f'#line 1 "{label}"')
        self.add(text)
        # the prelude and the '#line 1 "kernel"' marker: line numbers below count from there
        self.add(f'#line {len(self.lines) + 2} "kernel"')

    def text(self):
        return "\n".join(self.lines) + "\n"


def typedefs(src, type_map):
    for letter, dt in type_map:
        src.add(f"typedef {CTYPES[dt]} {letter};")


def ctype_of(p, types):
    """C++ type of a parameter: its placeholder letter (typedef'd) or concrete type."""
    return p.ctype if p.dtype is None else CTYPES[types]


def declare_raw_and_scalars(src, params, args, types, meta_offsets):
    """CArray objects for raw parameters (meta at the given offsets) and const values for scalars."""
    for k, (p, a, t) in enumerate(zip(params, args, types)):
        ct = ctype_of(p, t)
        if a.kind == "raw":
            nd, contig = meta_offsets[k][1], meta_offsets[k][2]
            const = "const " if p.is_const else ""
            src.add(f"CArray<{const}{ct}, {nd}, {'true' if contig else 'false'}> {p.name}(_args[{k}], "
                    f"_meta + {meta_offsets[k][0]});")
        elif a.kind == "scalar":
            src.add(f"const {ct} {p.name} = *(const {ct}*)_args[{k}];")
