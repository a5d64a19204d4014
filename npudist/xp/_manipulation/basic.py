"""Basic operations: copyto, clip, diagonal, trace (matches NumPy's). All four are the core's own
(npudist.xp._core._manipulation: ndarray's methods and creation's full use them), re-exported here
where CuPy's cupy._manipulation.basic keeps them."""
from .._core._manipulation import clip, copyto, diagonal, trace  # noqa: F401  (re-exported: the core's own)
