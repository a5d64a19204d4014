"""csrc/xp/python_names.h: every Python name xp's C code reads exists where the header says, and
the C types come from npudist._C._xp_register() (issue #41)."""
import pathlib
import re

import pytest

import npudist
import npudist.xp as xp
from npudist import _C

HEADER = pathlib.Path(__file__).resolve().parents[2] / "csrc" / "xp" / "python_names.h"
_ENTRY = re.compile(r'X\((\w+), "([^"]+)", "([^"]+)"\)')


def python_names(text=None):
    """(variable, name, where) for every entry of NPUDIST_XP_PYTHON_NAMES in the header."""
    text = HEADER.read_text() if text is None else text
    block = text[text.index("#define NPUDIST_XP_PYTHON_NAMES(X)"):text.index("namespace npudist::xp")]
    return _ENTRY.findall(block)


def test_header_lists_the_names_and_only_it_interns_them():
    names = python_names()
    assert {"_t", "_h", "ENABLED", "FAST", "SMALL", "float64_mode", "_call", "_call_declined", "_fast"} <= \
        {n for _, n, _ in names}
    # the rest of csrc/xp reads no attribute by a literal: all go through the header's variables
    for p in HEADER.parent.glob("*.[ch]*"):
        if p != HEADER:
            src = p.read_text()
            assert not re.search(r"PyObject_GetAttrString|PyUnicode_InternFromString\(\"_", src), p.name


@pytest.mark.parametrize("var,name,where", python_names())
def test_each_name_exists_where_the_header_says(var, name, where):
    owner = eval(where, {"xp": xp})   # (the header's column: an expression over xp)
    assert hasattr(owner, name), f"python_names.h: {var} reads {name!r} from {where}, which has no such attribute"


def test_the_check_fails_for_a_missing_name():
    (entry,) = python_names('#define NPUDIST_XP_PYTHON_NAMES(X) X(s_gone, "_gone", "xp.ndarray")\nnamespace npudist::xp')
    assert not hasattr(eval(entry[2], {"xp": xp}), entry[1])


def test_types_are_registered_by_xp():
    # npudist._C has the registration function; npudist.xp's import called it (idempotent)
    assert callable(_C._xp_register)
    _C._xp_register()
    for t in ("_XpHostUfunc", "_XpHostFunc", "_XpUfuncBase", "_XpUfuncOp"):
        assert isinstance(getattr(_C, t), type), t
    assert isinstance(xp.add, _C._XpUfuncBase) and isinstance(xp.ndarray.__dict__["__add__"], _C._XpUfuncOp)
    assert npudist.xp is xp
