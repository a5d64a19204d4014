"""npudist.xp.lib: the parts of numpy.lib CuPy keeps (cupy.lib.stride_tricks)."""
from . import stride_tricks

__all__ = ["stride_tricks"]
