"""Power series (matches numpy.polynomial.polynomial for the functions here: same algorithm
order, result dtypes and errors). Coefficients run from low to high degree."""
from .._creation import array, asarray, zeros
from .._manipulation import moveaxis, stack
from . import polyutils as pu

__all__ = ["polyvander", "polycompanion", "polyval", "polyadd", "polysub", "polymulx", "polymul", "polyder",
           "polyint", "polyline"]


def polyline(off, scl):
    """Series ``off + scl*x`` (``[off]`` when scl == 0)."""
    if scl != 0:
        return array([off, scl])
    return array([off])


def polyvander(x, deg):
    """Vandermonde matrix ``V[..., i] = x**i`` of shape ``x.shape + (deg+1,)``; x is converted
    with ``+ 0.0`` (ints/bool -> float64, float16/32 kept). deg must be a non-negative int
    (TypeError for floats, ValueError for negatives)."""
    ideg = pu._as_int(deg, "deg")
    if ideg < 0:
        raise ValueError("deg must be non-negative")
    x = array(x, copy=None, ndmin=1) + 0.0
    v = [x * 0 + 1]
    if ideg > 0:
        v.append(x)
        for _ in range(2, ideg + 1):
            v.append(v[-1] * x)  # successive products, as NumPy computes them
    return moveaxis(stack(v), 0, -1)


def polycompanion(c):
    """Companion matrix (deg x deg) of the series c; ValueError when c (trimmed) has degree < 1."""
    [c] = pu.as_series([c])
    if len(c) < 2:
        raise ValueError("Series must have maximum degree of at least 1.")
    if len(c) == 2:
        return (-c[0] / c[1]).reshape(1, 1)
    n = len(c) - 1
    mat = zeros((n, n), dtype=c.dtype)
    bot = mat.reshape(-1)[n::n + 1]
    bot[...] = 1
    mat[:, -1] -= c[:-1] / c[-1]
    return mat


def polyval(x, c, tensor=True):
    """Value of the series c at x by Horner's scheme (numpy.polynomial.polynomial.polyval; c of
    int/bool dtype is taken as float64, ``tensor`` extends c's shape over x's)."""
    c = array(c, ndmin=1, copy=None)
    if c.dtype.char in "?bBhHiIlLqQpP":
        c = c + 0.0
    if isinstance(x, (tuple, list)):
        x = asarray(x)
    if tensor and hasattr(x, "ndim"):
        c = c.reshape(c.shape + (1,) * x.ndim)
    c0 = c[-1] + x * 0
    for i in range(2, len(c) + 1):
        c0 = c[-i] + c0 * x
    return c0


def _add_sub(c1, c2, sign):
    [c1, c2] = pu.as_series([c1, c2])
    if len(c1) > len(c2):
        if sign < 0:
            c1[:c2.size] -= c2
        else:
            c1[:c2.size] += c2
        ret = c1
    else:
        if sign < 0:
            c2 = -c2
        c2[:c1.size] += c1
        ret = c2
    return pu.trimseq(ret)


def polyadd(c1, c2):
    """Sum of two series (trailing zeros trimmed)."""
    return _add_sub(c1, c2, 1)


def polysub(c1, c2):
    """Difference c1 - c2 of two series (trailing zeros trimmed)."""
    return _add_sub(c1, c2, -1)


def polymulx(c):
    """The series c multiplied by x."""
    [c] = pu.as_series([c])
    if len(c) == 1 and c[0] == 0:
        return c
    prd = zeros(len(c) + 1, dtype=c.dtype)
    prd[1:] = c
    return prd


def polymul(c1, c2):
    """Product of two series (a convolution, trailing zeros trimmed)."""
    from .._misc import convolve
    [c1, c2] = pu.as_series([c1, c2])
    return pu.trimseq(convolve(c1, c2))


def polyder(c, m=1, scl=1, axis=0):
    """m-th derivative along ``axis``, each step multiplied by scl (ints -> float64)."""
    c = array(c, ndmin=1, copy=True)
    if c.dtype.char in "?bBhHiIlLqQpP":
        c = c.astype("float64")
    cdt = c.dtype
    cnt = pu._as_int(m, "the order of derivation")
    iaxis = pu._as_int(axis, "the axis")
    if cnt < 0:
        raise ValueError("The order of derivation must be non-negative")
    from .._convert import normalize_axis
    iaxis = normalize_axis(iaxis, c.ndim)
    if cnt == 0:
        return c
    c = moveaxis(c, iaxis, 0)
    n = len(c)
    if cnt >= n:
        c = c[:1] * 0
    else:
        for _ in range(cnt):
            n = n - 1
            c = c * scl
            der = zeros((n,) + c.shape[1:], dtype=cdt)
            for j in range(n, 0, -1):
                der[j - 1] = j * c[j]
            c = der
    return moveaxis(c, 0, iaxis)


def polyint(c, m=1, k=[], lbnd=0, scl=1, axis=0):  # noqa: B006  (NumPy's signature)
    """m-th integral along ``axis`` with integration constants k (ints -> float64)."""
    from .._misc import isscalar
    c = array(c, ndmin=1, copy=True)
    if c.dtype.char in "?bBhHiIlLqQpP":
        c = c.astype("float64")
    cdt = c.dtype
    if not hasattr(k, "__iter__") or isscalar(k):
        k = [k]
    cnt = pu._as_int(m, "the order of integration")
    iaxis = pu._as_int(axis, "the axis")
    if cnt < 0:
        raise ValueError("The order of integration must be non-negative")
    if len(k) > cnt:
        raise ValueError("Too many integration constants")
    if hasattr(lbnd, "ndim") and lbnd.ndim != 0:
        raise ValueError("lbnd must be a scalar.")
    if hasattr(scl, "ndim") and scl.ndim != 0:
        raise ValueError("scl must be a scalar.")
    from .._convert import normalize_axis
    iaxis = normalize_axis(iaxis, c.ndim)
    if cnt == 0:
        return c
    k = list(k) + [0] * (cnt - len(k))
    c = moveaxis(c, iaxis, 0)
    for i in range(cnt):
        n = len(c)
        c = c * scl
        if n == 1 and bool((c[0] == 0).all()):
            c[0] += k[i]
        else:
            tmp = zeros((n + 1,) + c.shape[1:], dtype=cdt)
            tmp[0] = c[0] * 0
            tmp[1] = c[0]
            for j in range(1, n):
                tmp[j + 1] = c[j] / (j + 1)
            tmp[0] += k[i] - polyval(lbnd, tmp)
            c = tmp
    return moveaxis(c, 0, iaxis)
