"""The one-variable polynomial class and routines of NumPy's top level (matches numpy.poly1d,
numpy.poly/polyadd/polysub/polymul/polydiv/polyder/polyint/polyval/polyfit/roots; CuPy has them as
cupy.poly1d and cupy.poly/polyadd/... in cupy/lib).

Coefficient arrays are short, so every routine but ``polyval`` runs NumPy's own code on host copies
of the coefficients and copies the result onto the npu (values, dtypes, errors and warnings are
NumPy's, ``numpy.exceptions.RankWarning`` included). ``polyval`` evaluates on the npu with
NumPy's Horner loop (``y = y * x + p[i]``), so its dtypes follow NumPy's promotion. A 0-d ``x``
gives a 0-d xp array where NumPy gives a scalar (as everywhere in xp).

Where CuPy differs and xp follows NumPy: ``poly`` of a square non-symmetric matrix (CuPy raises
NotImplementedError; NumPy and xp use its general eigenvalues), ``roots`` of non-symmetric
companion matrices and of bool coefficients (CuPy raises NotImplementedError)."""
import numpy as np

from .._core import ndarray
from .._creation import asanyarray, asarray, zeros, zeros_like

__all__ = ["poly1d", "poly", "polyadd", "polysub", "polymul", "polydiv", "polyder", "polyint", "polyval",
           "polyfit", "roots"]


def _host(x):
    """xp arrays and poly1d -> their NumPy twins (host copies); anything else as it is."""
    if isinstance(x, ndarray):
        return x.get()
    if isinstance(x, poly1d):
        return x.get()
    if isinstance(x, (list, tuple)):
        return type(x)(_host(v) for v in x)
    return x


def _dev(r):
    """NumPy results -> xp: poly1d -> xp.poly1d, ndarray -> xp array; tuples item by item; scalars
    (polyfit's rank and rcond) stay NumPy's."""
    if isinstance(r, np.poly1d):
        return poly1d(r)
    if isinstance(r, np.ndarray):
        return asarray(r)
    if isinstance(r, tuple):
        return tuple(_dev(v) for v in r)
    return r


class poly1d:
    """A one-dimensional polynomial (matches numpy.poly1d; cupy.poly1d): ``poly1d(c_or_r, r=False,
    variable=None)`` with coefficients in decreasing powers (leading zeros trimmed; none left ->
    ``[0]`` of the input's dtype), or its roots when ``r=True``.

    ``coeffs`` (also ``c``, ``coef``, ``coefficients``) is an xp array on the npu; ``variable``,
    ``order``, ``roots``, ``p(x)`` (evaluation, ``polyval``), ``p[k]`` (coefficient of ``x**k``,
    0 beyond the order; ``p[k] = v`` grows the polynomial), ``+ - * / **`` with polynomials, arrays
    and scalars, ``==``/``!=``, ``deriv``, ``integ``, ``repr``/``str`` (NumPy's text) and, as CuPy,
    ``get()`` (a numpy.poly1d) and ``set(numpy_poly1d)``. Errors are NumPy's: ValueError for
    coefficients of more than one dimension, negative or non-integral powers and negative indices
    in ``p[k] = v``; TypeError for float powers."""

    __hash__ = None

    def __init__(self, c_or_r, r=False, variable=None):
        if isinstance(c_or_r, poly1d):
            self._variable = c_or_r._variable if variable is None else variable
            self._coeffs = c_or_r._coeffs
            return
        h = c_or_r if isinstance(c_or_r, np.poly1d) and not r and variable is None else \
            np.poly1d(_host(c_or_r), r, variable)
        self._coeffs = asarray(h.coeffs)
        self._variable = h.variable

    # -- attributes (numpy.poly1d's) --
    @property
    def coeffs(self):
        return self._coeffs

    @coeffs.setter
    def coeffs(self, value):
        if value is not self._coeffs:
            raise AttributeError("Cannot set attribute")

    c = coef = coefficients = coeffs

    @property
    def variable(self):
        return self._variable

    @property
    def order(self):
        return self._coeffs.size - 1

    o = order

    @property
    def roots(self):
        return roots(self._coeffs)

    r = roots

    def get(self, stream=None):
        """The polynomial as a numpy.poly1d (host copy of the coefficients; as cupy.poly1d.get)."""
        return np.poly1d(self._coeffs.get(), variable=self._variable)

    def set(self, value, stream=None):
        """Takes the coefficients and variable of a numpy.poly1d (as cupy.poly1d.set)."""
        if not isinstance(value, np.poly1d):
            raise TypeError(f"poly1d.set takes a numpy.poly1d, not {type(value).__name__}")
        self._coeffs = asarray(value.coeffs)
        self._variable = value.variable

    def __array__(self, dtype=None, copy=None):
        if copy is False:
            raise ValueError("poly1d.__array__(copy=False): the coefficients are npu memory; a NumPy array of "
                             "them is a host copy")
        return np.asarray(self._coeffs.get(), dtype)

    def __repr__(self):
        return repr(self.get())

    def __str__(self):
        return str(self.get())

    def __len__(self):
        return self.order

    def __iter__(self):
        return iter(self._coeffs)

    def __call__(self, val):
        return polyval(self._coeffs, val)

    def __getitem__(self, val):
        if val > self.order or val < 0:     # NumPy: a zero of the dtype (xp: a 0-d array, as p[k])
            return zeros((), self._coeffs.dtype)
        return self._coeffs[self.order - val]

    def __setitem__(self, key, val):
        if key < 0:
            raise ValueError("Does not support negative powers.")
        if key > self.order:
            from .._manipulation import concatenate
            self._coeffs = concatenate((zeros(key - self.order, self._coeffs.dtype), self._coeffs))
        self._coeffs[self.order - key] = val

    def deriv(self, m=1):
        """The m-th derivative (numpy.poly1d.deriv)."""
        return _dev(self.get().deriv(m))

    def integ(self, m=1, k=0):
        """The m-th antiderivative with integration constants k (numpy.poly1d.integ)."""
        return _dev(self.get().integ(m, _host(k)))

    # -- arithmetic: NumPy's poly1d operators on host copies --
    def _op(self, name, other):
        r = getattr(self.get(), name)(_host(other))
        return NotImplemented if r is NotImplemented else _dev(r)

    def __neg__(self):
        return _dev(-self.get())

    def __pos__(self):
        return self

    def __eq__(self, other):
        return self._op("__eq__", other)

    def __ne__(self, other):
        return self._op("__ne__", other)


def _binary(name):
    def op(self, other):
        return self._op(name, other)
    op.__name__ = name
    return op


for _name in ("__add__", "__radd__", "__sub__", "__rsub__", "__mul__", "__rmul__", "__truediv__",
              "__rtruediv__", "__pow__"):
    setattr(poly1d, _name, _binary(_name))
del _name


def _host_routine(name):
    f = getattr(np, name)

    def routine(*args, **kwargs):
        return _dev(f(*_host(args), **{k: _host(v) for k, v in kwargs.items()}))
    routine.__name__ = routine.__qualname__ = name
    routine.__doc__ = (f"numpy.{name} on host copies of the operands, result copied onto the npu "
                       f"(xp.poly1d in, xp.poly1d out; NumPy's values, dtypes and errors).")
    return routine


poly = _host_routine("poly")
polyadd = _host_routine("polyadd")
polysub = _host_routine("polysub")
polymul = _host_routine("polymul")
polydiv = _host_routine("polydiv")
polyder = _host_routine("polyder")
polyint = _host_routine("polyint")
polyfit = _host_routine("polyfit")
roots = _host_routine("roots")


def polyval(p, x):
    """p evaluated at x (matches numpy.polyval): Horner's loop ``y = y * x + p[i]`` on the npu,
    starting from ``zeros_like(x)``, so the result dtype is NumPy's promotion of x's and p's. p is a
    1-D coefficient array or poly1d; x an array, scalar or poly1d (then a poly1d, computed on the
    host). A 0-d p raises TypeError, as NumPy's iteration over it."""
    if isinstance(p, poly1d):
        p = p.coeffs
    if isinstance(x, (poly1d, np.poly1d)):
        return _dev(np.polyval(_host(p), _host(x)))
    if isinstance(p, np.poly1d):
        p = p.coeffs
    p = asarray(p)
    x = asanyarray(x)
    y = zeros_like(x)
    for pv in p:
        y = y * x + pv
    return y
