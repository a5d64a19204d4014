"""xp.polynomial: NumPy's power-series helpers on npu arrays (as CuPy's cupy.polynomial).

Partial, as CuPy's is: ``polynomial`` has polyvander, polycompanion, polyval, polyadd, polysub,
polymulx, polymul, polyder, polyint, polyline; ``polyutils`` has as_series, trimseq, trimcoef.
The convenience classes (numpy.polynomial.Polynomial, Chebyshev, ...) are not provided."""
from . import polynomial, polyutils  # noqa: F401  (re-exported)
