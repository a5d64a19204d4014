"""Public ufuncs of npudist.xp (xp.add, xp.sin, ... and the ``xp.ufunc`` class): the core's one
table (npudist.xp._core._ufuncs; ndarray's operators call the same objects)."""
from ._core._array import OPS as UFUNCS
from ._core._ufuncs import ufunc  # noqa: F401  (re-exported: xp.ufunc)

globals().update(UFUNCS)
