"""The bottom of xp's core: making xp arrays (``wrap``, ``result``) and the ufunc table
(``OPS``), for the routines below ndarray (``_reductions``, ``_sorting``, ``_statistics``,
``_ufuncs``) and for ndarray itself.

The array class is defined above these routines (its methods call them), so they reach it by
registration, not by import: npudist.xp._core._ufuncs fills ``OPS`` when it is imported (before
the class statement, whose body holds operators over those ufuncs), and ``_ndarray`` calls
:func:`register` once, right after the class statement, which records the class (``ARRAY``) and
gives it to every ufunc (their C fast path reads its slots). Until then ``wrap`` and the ufuncs'
calls are unusable, which no import order can observe: ``npudist.xp._core`` imports ``_ndarray``
before anything else runs.
"""
from .._convert import ArrayBase
from .._dtypes import complex_to_real
from .._unsigned import UINT, as_uint

ARRAY = None
"""xp.ndarray, once registered."""

OPS = {}
"""xp's ufuncs by NumPy name and alias (filled by npudist.xp._core._ufuncs at import): the one table behind ndarray's operators,
the core's routines and the public ``xp.add`` etc."""


def register(array_type):
    """Records xp's array class and gives it to every ufunc of ``OPS`` (``bind_array_type``: the
    C fast path of npudist.xp._core._ufuncs' ufuncs reads the class's slots). Called once, by
    npudist.xp._core._ndarray right after the class is defined; RuntimeError on a second call."""
    global ARRAY
    if ARRAY is not None:
        raise RuntimeError("npudist.xp._core._array.register: the array class is registered already")
    ARRAY = array_type
    for uf in {id(u): u for u in OPS.values()}.values():   # (aliases share one object)
        uf.bind_array_type(array_type)


def array_type():
    """xp.ndarray (for numpy_first's ``array_type``, which resolves it at the first call)."""
    return ARRAY


def is_array(x):
    """True for an xp.ndarray (subclasses included), as ``isinstance(x, xp.ndarray)``."""
    return isinstance(x, ARRAY)


def wrap(t):
    """torch tensor (supported dtype, any device) -> xp.ndarray sharing its memory."""
    a = object.__new__(ARRAY)
    a._t = as_uint(t) if t.dtype in UINT else t
    return a


def result(res, out=None):
    """Wraps a result tensor, or copies it into ``out`` (an xp array of the result's shape)."""
    if out is None:
        return wrap(res)
    if not isinstance(out, ArrayBase):
        raise TypeError(f"out must be an xp.ndarray, got {type(out).__name__}")
    if tuple(out._t.shape) != tuple(res.shape):
        raise ValueError(f"output array has shape {tuple(out._t.shape)}, the result has {tuple(res.shape)}")
    out._t.copy_(complex_to_real(res, out._t.dtype, stacklevel=3))  # NumPy's ComplexWarning, not torch's
    return out
