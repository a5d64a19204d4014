"""ndarray's ufunc operators, made for its class body (npudist.xp._core._ndarray:
``__add__ = ufunc_operator("__add__")``). Each is an npudist._C._XpUfuncOp over the one table's
ufunc (npudist.xp._core._array.OPS): ``a + b`` runs the ufunc's C fast path with no Python frame
and falls back to a Python operator that follows NEP 13 for foreign operands, then calls the
ufunc. The table's ufuncs exist before the class (npudist.xp._core._ufuncs fills it at import);
their C fast path, which reads the class's slots, is built when ``_array.register`` records the
class, and the C operator reads it at each call, so no operator is rebound after the class."""
import numpy as np

from .. import _host
from .._protocols import NO_OVERRIDE, nep13_override
from . import _ufuncs  # noqa: F401  (fills OPS: the ufuncs exist before the operators made over them)
from ._array import OPS

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

UNARY = frozenset({"__neg__", "__pos__", "__abs__", "__invert__"})


def _calling(uf, dunder, reflected):
    """The plain Python operator: the ufunc on (self[, o]), (o, self) when reflected."""
    if dunder in UNARY:
        def op(self):
            return uf(self)
    elif reflected:
        def op(self, o):
            return uf(o, self)
    else:
        def op(self, o):
            return uf(self, o)
    op.__name__, op.__qualname__ = dunder, f"ndarray.{dunder}"
    op.__doc__ = f"ndarray.{dunder}: xp.{uf.__name__} (numpy.ndarray.{dunder})."
    return op


def _deferring(py_op, name, reflected):
    """``py_op`` (a binary operator of ndarray) under NEP 13's operator rule for foreign operands
    (npudist.xp._protocols.nep13_override: ``__array_ufunc__ = None`` -> NotImplemented, an operand's own
    ``__array_ufunc__`` runs NumPy's ufunc ``name``). Only reached when the C fast path declines."""
    np_ufunc = getattr(np, name)

    def op(self, other):
        r = nep13_override(other, np_ufunc, (other, self) if reflected else (self, other))
        return py_op(self, other) if r is NO_OVERRIDE else r

    op.__name__, op.__qualname__, op.__doc__, op.__wrapped__ = py_op.__name__, py_op.__qualname__, py_op.__doc__, py_op
    return op


def ufunc_operator(dunder, fallback=None):
    """ndarray's operator ``dunder`` (a key of OPERATORS), for the class body: an
    npudist._C._XpUfuncOp running the ufunc's C fast path, else the Python operator — ``fallback``
    (a function of (self[, o]) defined in the class body, e.g. ``__eq__``'s handling of None and
    foreign objects) or one calling the ufunc, under NEP 13's rule for binary operators. Without
    the extension's C types, the Python operator itself. KeyError for a dunder not in OPERATORS."""
    name, reflected = OPERATORS[dunder]
    uf = OPS[name]
    py_op = fallback if fallback is not None else _calling(uf, dunder, reflected)
    if dunder not in UNARY:
        py_op = _deferring(py_op, name, reflected)
    op_type, base = getattr(_C, "_XpUfuncOp", None), getattr(_C, "_XpUfuncBase", None)
    if op_type is None or base is None or not isinstance(uf, base):
        return py_op
    return op_type(uf, py_op, reflected)
