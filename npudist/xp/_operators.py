"""ndarray's ufunc operators bound as npudist._C._XpUfuncOp objects (registration, apart from
ndarray's definitions in npudist.xp._core): ``a + b`` runs the ufunc's C fast path with no Python
frame and falls back to the Python operator _core defines. Imported by npudist.xp's __init__."""
import numpy as np

from . import _host
from ._core import OPS, ndarray
from ._protocols import NO_OVERRIDE, nep13_override

_C = _host._C

# ndarray's operators backed by one ufunc each: dunder -> (ufunc, reflected)
OPERATORS = {
    **{f"__{d}__": (u, False) for d, u in (
        ("add", "add"), ("sub", "subtract"), ("mul", "multiply"), ("truediv", "true_divide"),
        ("floordiv", "floor_divide"), ("mod", "remainder"), ("divmod", "divmod"), ("pow", "power"),
        ("and", "bitwise_and"), ("or", "bitwise_or"), ("xor", "bitwise_xor"), ("lshift", "left_shift"),
        ("rshift", "right_shift"), ("neg", "negative"), ("pos", "positive"), ("abs", "absolute"),
        ("invert", "invert"), ("lt", "less"), ("le", "less_equal"), ("gt", "greater"), ("ge", "greater_equal"),
        ("eq", "equal"), ("ne", "not_equal"))},
    **{f"__r{d}__": (u, True) for d, u in (
        ("add", "add"), ("sub", "subtract"), ("mul", "multiply"), ("truediv", "true_divide"),
        ("floordiv", "floor_divide"), ("mod", "remainder"), ("divmod", "divmod"), ("pow", "power"),
        ("and", "bitwise_and"), ("or", "bitwise_or"), ("xor", "bitwise_xor"), ("lshift", "left_shift"),
        ("rshift", "right_shift"))},
}


def _deferring(py_op, name, reflected):
    """``py_op`` (a binary operator of ndarray) under NEP 13's operator rule for foreign operands
    (npudist.xp._protocols.nep13_override: ``__array_ufunc__ = None`` -> NotImplemented, an operand's own
    ``__array_ufunc__`` runs NumPy's ufunc ``name``). Only reached when the C fast path declines."""
    np_ufunc = getattr(np, name)

    def op(self, other):
        r = nep13_override(other, np_ufunc, (other, self) if reflected else (self, other))
        return py_op(self, other) if r is NO_OVERRIDE else r

    op.__name__, op.__qualname__, op.__doc__, op.__wrapped__ = py_op.__name__, py_op.__qualname__, py_op.__doc__, py_op
    op._nep13 = True
    return op


_UNARY = {"__neg__", "__pos__", "__abs__", "__invert__"}


def bind_operators():
    """ndarray's ufunc operators as npudist._C._XpUfuncOp objects: ``a + b`` runs the ufunc's C fast
    path without a Python frame (the fixed cost of a 16-element call), and the Python operator
    npudist.xp._core defines, kept as the fallback, whenever that path declines. Without the extension's type
    the Python operators stay."""
    for dunder, (name, reflected) in OPERATORS.items():   # (a @ b checks in _core's __matmul__)
        if dunder not in _UNARY and not getattr(ndarray.__dict__[dunder], "_nep13", False):
            setattr(ndarray, dunder, _deferring(ndarray.__dict__[dunder], name, reflected))
    op_type = getattr(_C, "_XpUfuncOp", None)
    base = getattr(_C, "_XpUfuncBase", None)
    if op_type is None or base is None:
        return
    for dunder, (name, reflected) in OPERATORS.items():
        uf = OPS[name]
        py_op = ndarray.__dict__[dunder]
        if isinstance(uf, base) and not isinstance(py_op, op_type):
            setattr(ndarray, dunder, op_type(uf, py_op, reflected))


bind_operators()
