"""``a == o`` / ``a != o`` for Python objects that are not numbers or arrays, as NumPy 2 compares
them. Core module: imports nothing above npudist.xp._core (which wraps tensor results)."""
import numpy as np
import torch

from ._convert import ArrayBase, to_numpy

_NOT_PLAIN = ("__array__", "__array_interface__", "__cuda_array_interface__", "__dlpack__", "__len__", "__iter__",
              "__index__", "__float__", "__complex__")


def foreign_object(o):
    """An object NumPy would hold in an object array that defines its own == or != (not a number,
    sequence or array-like)."""
    tp = type(o)
    return (not isinstance(o, (int, float, complex, np.generic, torch.Tensor, ArrayBase))
            and (tp.__eq__ is not object.__eq__ or tp.__ne__ is not object.__ne__)
            and not any(hasattr(tp, n) for n in _NOT_PLAIN))


def plain_object(o):
    """Whether ``a == o`` compares no element equal in NumPy 2: o is an object NumPy can only hold in
    an object array (``Ellipsis``, ``object()``, ``numpy._NoValue``) whose type keeps object's
    identity ``==``/``!=``, so ``element == o`` is False for every element."""
    tp = type(o)
    return (tp.__eq__ is object.__eq__ and tp.__ne__ is object.__ne__
            and not any(hasattr(tp, n) for n in _NOT_PLAIN))


def compare(t, op, o):
    """``op(a, o)`` (operator.eq or ne) for npu tensor ``t`` (an xp array's memory) and an object with
    its own ``__eq__``/``__ne__`` that NumPy can only hold in an object array: NumPy's object
    comparison (each element's Python scalar against o, o's reflected method answering) run by NumPy
    on a host copy. A bool array result comes back as an npu bool tensor of t's shape; anything else
    (NotImplemented, a Python bool) as NumPy returned it."""
    r = op(to_numpy(t), o)
    if isinstance(r, np.ndarray) and r.dtype == np.bool_:
        return torch.from_numpy(np.ascontiguousarray(r)).to(t.device)
    return r
