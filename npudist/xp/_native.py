"""xp's C layer (csrc/xp), registered into ``npudist._C`` when npudist.xp is first imported.

``npudist._C`` loads without NumPy: its xp types (``_XpHostUfunc``, ``_XpHostFunc``,
``_XpUfuncBase``, ``_XpUfuncOp``) are created only by ``_C._xp_register()``, which imports
NumPy's C API. This module calls it once, before any xp module looks the types up. With an
extension built without xp's layer (an old build) the types are absent and xp's pure-Python
paths run, as they always could.
"""
from npudist import _C

_register = getattr(_C, "_xp_register", None)
if _register is not None:
    _register()
