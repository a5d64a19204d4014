"""An xp array's bytes seen otherwise: ``ndarray.view(dtype)`` and ``ndarray.byteswap``, at the
tensor level (npudist.xp._core wraps the results). Core module: imports nothing above _core."""
import torch

from ._convert import in_order
from ._negview import NegStrided
from ._unsigned import plain


def byteswapped(t):
    """A new tensor holding ``t``'s elements with their bytes reversed, in memory order 'A' (as
    numpy.ndarray.byteswap: complex values swap real and imaginary parts separately; 1-byte dtypes
    are copied unchanged)."""
    c = in_order(plain(t).resolve_conj().resolve_neg(), "A", copy=True)
    width = c.element_size() // (2 if c.is_complex() else 1)
    if width > 1 and c.numel():
        flat = c.as_strided((c.numel(),), (1,), 0).view(torch.uint8)   # c's memory: dense, C or F
        flat.copy_(flat.view(-1, width).flip(-1).reshape(-1))
    return c


def dtype_view(t, tdt):
    """(view, over_whole_storage): ``t``'s memory seen as torch dtype ``tdt`` with NumPy 2's
    numpy.ndarray.view(dtype) rules — a different itemsize rescales the last axis, which must be
    contiguous unless of length 1 or the array is empty; other strides are kept. The view is made
    over the whole storage (over_whole_storage True: it never owns its memory, the caller sets its
    base) except for negative-stride views, viewed by torch. Raises NumPy's ValueErrors for 0-d
    arrays, non-contiguous last axes and sizes that do not divide, and ValueError where the strides or
    offset in bytes are not multiples of the new itemsize (NumPy accepts those; torch counts strides
    in elements)."""
    new, old = torch.empty((), dtype=tdt).element_size(), t.element_size()
    if t.__class__ is NegStrided:
        if new != old and t.ndim and t.stride(-1) != 1 and t.shape[-1] != 1:
            raise ValueError("To change to a dtype of a different size, the last axis must be contiguous")
        return t.view(tdt), False
    shape, strides = list(t.shape), [st * old for st in t.stride()]
    if new != old:
        if not t.ndim:
            raise ValueError("Changing the dtype of a 0d array is only supported if the itemsize is unchanged")
        if shape[-1] != 1 and t.numel() and strides[-1] != old:
            raise ValueError("To change to a dtype of a different size, the last axis must be contiguous")
        nbytes = shape[-1] * old
        if new > old and nbytes % new:
            raise ValueError("When changing to a larger dtype, its size must be a divisor of the total size "
                             "in bytes of the last axis of the array.")
        shape[-1], strides[-1] = nbytes // new, new
    offset = t.storage_offset() * old
    if offset % new or any(st % new for st in strides):
        raise ValueError(f"xp: a {old}-byte to {new}-byte view of this array would need strides {tuple(strides)} "
                         f"or offset {offset} that are not multiples of {new} bytes, which a torch tensor cannot "
                         f"hold; view a copy (a.copy().view(dtype))")
    # a view of a tensor over the whole storage: never owns its memory (torch's view(dtype) would)
    whole = torch.empty(0, dtype=tdt, device=t.device).set_(plain(t).untyped_storage())
    return whole.as_strided(shape, [st // new for st in strides], offset // new), True
