"""ndarray's ufunc operators bound as npudist._C._XpUfuncOp objects (registration, apart from
ndarray's definitions in npudist.xp._core): ``a + b`` runs the ufunc's C fast path with no Python
frame and falls back to the Python operator _core defines. Imported by npudist.xp's __init__."""
from . import _host
from ._core import OPS, ndarray

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


def bind_operators():
    """ndarray's ufunc operators as npudist._C._XpUfuncOp objects: ``a + b`` runs the ufunc's C fast
    path without a Python frame (the 16-element per-op cost, issue 21), and the Python operator
    npudist.xp._core defines, kept as the fallback, whenever that path declines. Without the extension's type
    the Python operators stay."""
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
