"""Whether arrays share memory (matches numpy.shares_memory and numpy.may_share_memory), and
byte_bounds (cupy.byte_bounds / numpy.lib.array_utils.byte_bounds)."""
import torch

from ._core import tensor_of
from ._negview import NegStrided, source
from ._overlap import tensor_bounds as _bounds


def _memory(a):
    """The tensor whose elements are the memory a uses: a negative-stride view's positive-stride
    source over the same memory (npudist.xp._negview), else a's tensor."""
    t = tensor_of(a)
    return source(t) if type(t) is NegStrided else t


def may_share_memory(a, b, max_work=None):
    """True if the memory ranges of a and b overlap (matches numpy.may_share_memory: bounds only)."""
    ta, tb = _memory(a), _memory(b)
    ra, rb = _bounds(ta), _bounds(tb)
    return bool(ra and rb and ra[0] < rb[1] and rb[0] < ra[1])


def _addresses(t):
    """Byte addresses of every byte of every element of t (as a flat int64 tensor)."""
    idx = torch.zeros((), dtype=torch.int64)
    for n, st in zip(t.shape, t.stride()):
        idx = idx.unsqueeze(-1) + torch.arange(n, dtype=torch.int64) * st
    base = t.data_ptr() + idx.reshape(-1) * t.element_size()
    return (base.unsqueeze(-1) + torch.arange(t.element_size(), dtype=torch.int64)).reshape(-1)


def shares_memory(a, b, max_work=None):
    """True if a and b have a byte in common (matches numpy.shares_memory: exact, also for
    interleaved views such as a[::2] and a[1::2]). The exact check enumerates the addresses of the
    overlapping arrays on the host, so it costs O(size) host memory."""
    ta, tb = _memory(a), _memory(b)
    if not may_share_memory(ta, tb):
        return False
    if max_work is not None and max_work != -1:
        return True      # bounded work: NumPy's answer for max_work=0 is the bounds check
    return bool(torch.isin(_addresses(ta), _addresses(tb)).any())


def byte_bounds(a):
    """(low, high): the first byte address an array uses and one past its last (matches
    cupy.byte_bounds and numpy.lib.array_utils.byte_bounds; an empty array gives (ptr, ptr)).
    Negative strides (``a[::-1]``) extend the range below ``a.data.ptr``, the first element's."""
    from ._core import ndarray
    if not isinstance(a, ndarray):
        raise TypeError(f"byte_bounds takes an xp.ndarray, got {type(a).__name__}")
    low = high = a.data.ptr
    if a.size == 0:
        return low, high
    for n, st in zip(a.shape, a.strides):
        if st < 0:
            low += (n - 1) * st
        else:
            high += (n - 1) * st
    return low, high + a.itemsize
