"""Rounding (matches numpy.round / numpy.around): the function behind ``a.round()`` and
``xp.round`` (npudist.xp._misc re-exports it), in the core as cupy._core's rounding is."""
import torch

from .._convert import tensor_of as _t
from ._array import result


def round(a, decimals=0, out=None):
    """Round half to even to the given decimals (matches numpy.round)."""
    t = _t(a)
    if t.dtype == torch.bool:
        # NumPy: rint's float16 loop for decimals=0; otherwise its float64 scaling cannot go back to bool
        if decimals != 0:
            raise TypeError(f"Cannot cast ufunc 'multiply' output from dtype('float64') to dtype('bool') with "
                            f"casting rule 'same_kind' (round of a bool array with decimals={decimals})")
        return result(t.to(torch.float16), out)
    if t.is_complex():
        r = torch.complex(torch.round(t.real, decimals=decimals), torch.round(t.imag, decimals=decimals))
    elif t.dtype == torch.float16 and decimals:
        # NumPy scales, rounds and unscales in float16 (each step rounded to float16); PyTorch's
        # kernel keeps the scaled value in float32
        f = 10.0 ** abs(decimals)
        r = torch.round(t * f) / f if decimals > 0 else torch.round(t / f) * f
    elif t.is_floating_point():
        r = torch.round(t, decimals=decimals) if decimals else torch.round(t)
    elif decimals >= 0:
        r = t.clone()
    else:
        f = 10 ** (-decimals)
        r = (torch.round(t.to(torch.float64) / f) * f).to(t.dtype)
    return result(r, out)


around = round
