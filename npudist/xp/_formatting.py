"""Text forms of arrays and numbers (matches numpy.array_repr, array_str, array2string,
format_float_positional, format_float_scientific, base_repr, binary_repr and the print options;
CuPy's cupy/_io/formatting.py and base_n.py). NumPy formats a host copy of the array, so the text
is NumPy's and follows numpy's print options (set_printoptions is NumPy's own)."""
import numpy as np

from ._core import ndarray

__all__ = ["array_repr", "array_str", "array2string", "format_float_positional", "format_float_scientific",
           "base_repr", "binary_repr", "set_printoptions", "get_printoptions", "printoptions"]

# one set of print options for NumPy and xp arrays, as CuPy's formatting uses NumPy's
set_printoptions = np.set_printoptions
get_printoptions = np.get_printoptions
printoptions = np.printoptions


def _host(a):
    return a.get() if isinstance(a, ndarray) else a


def array_repr(arr, max_line_width=None, precision=None, suppress_small=None):
    """NumPy's repr text of the array (``array([...], dtype=...)``; matches numpy.array_repr)."""
    return np.array_repr(_host(arr), max_line_width, precision, suppress_small)


def array_str(a, max_line_width=None, precision=None, suppress_small=None):
    """NumPy's str text of the array (matches numpy.array_str)."""
    return np.array_str(_host(a), max_line_width, precision, suppress_small)


def array2string(a, max_line_width=None, precision=None, suppress_small=None, separator=" ", prefix="", *,
                 formatter=None, threshold=None, edgeitems=None, sign=None, floatmode=None, suffix="", legacy=None):
    """The array as text (matches numpy.array2string, every option; NumPy formats a host copy)."""
    return np.array2string(_host(a), max_line_width, precision, suppress_small, separator, prefix,
                           formatter=formatter, threshold=threshold, edgeitems=edgeitems, sign=sign,
                           floatmode=floatmode, suffix=suffix, legacy=legacy)


def format_float_positional(x, precision=None, unique=True, fractional=True, trim="k", sign=False, pad_left=None,
                            pad_right=None, min_digits=None):
    """A float (Python, NumPy scalar or 0-d array) in positional notation (matches
    numpy.format_float_positional; TypeError for non-floats, as NumPy)."""
    return np.format_float_positional(_host(x), precision, unique, fractional, trim, sign, pad_left, pad_right,
                                      min_digits)


def format_float_scientific(x, precision=None, unique=True, trim="k", sign=False, pad_left=None, exp_digits=None,
                            min_digits=None):
    """A float in scientific notation (matches numpy.format_float_scientific)."""
    return np.format_float_scientific(_host(x), precision, unique, trim, sign, pad_left, exp_digits, min_digits)


def base_repr(number, base=2, padding=0):
    """The integer ``number`` as a string in ``base`` (2..36), left-padded with ``padding`` zeros
    (matches numpy.base_repr; ValueError for a base above 36 or below 2)."""
    return np.base_repr(_host(number), base, padding)


def binary_repr(num, width=None):
    """The integer ``num`` in binary; negative numbers in two's complement when ``width`` is given
    (matches numpy.binary_repr)."""
    return np.binary_repr(_host(num), width)
