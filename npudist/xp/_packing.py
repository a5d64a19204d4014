"""Bit packing (matches numpy.packbits and numpy.unpackbits)."""
import operator

import torch

from ._core import normalize_axis, tensor_of, wrap


def packbits(a, axis=None, bitorder="big"):
    """Packs the truth values of an integer or bool array into uint8 bytes along axis (flattened
    when None), zero-padding the last byte (matches numpy.packbits)."""
    t = tensor_of(a)
    if t.is_floating_point() or t.is_complex():
        raise TypeError("Expected an input array of integer or boolean data type")
    if bitorder not in ("big", "little"):
        raise ValueError("'order' must be either 'little' or 'big'")
    if axis is None:
        t, axis = t.reshape(-1), 0
    axis = normalize_axis(axis, t.ndim)
    bits = (t != 0).to(torch.uint8).movedim(axis, -1)
    n = bits.shape[-1]
    pad = (-n) % 8
    if pad:
        bits = torch.cat([bits, bits.new_zeros(bits.shape[:-1] + (pad,))], dim=-1)
    bits = bits.reshape(bits.shape[:-1] + (-1, 8)).to(torch.int32)
    weights = torch.tensor([128, 64, 32, 16, 8, 4, 2, 1] if bitorder == "big" else [1, 2, 4, 8, 16, 32, 64, 128],
                           dtype=torch.int32, device=t.device)
    return wrap((bits * weights).sum(-1).to(torch.uint8).movedim(-1, axis))


def unpackbits(a, axis=None, count=None, bitorder="big"):
    """Unpacks uint8 bytes into bits along axis (flattened when None), keeping ``count`` bits
    (matches numpy.unpackbits)."""
    t = tensor_of(a)
    if t.dtype != torch.uint8:
        raise TypeError("Expected an input array of unsigned byte data type")
    if bitorder not in ("big", "little"):
        raise ValueError("'order' must be either 'little' or 'big'")
    if axis is None:
        t, axis = t.reshape(-1), 0
    axis = normalize_axis(axis, t.ndim)
    shifts = torch.tensor([7, 6, 5, 4, 3, 2, 1, 0] if bitorder == "big" else [0, 1, 2, 3, 4, 5, 6, 7],
                          dtype=torch.int32, device=t.device)
    x = t.movedim(axis, -1).to(torch.int32).unsqueeze(-1)
    bits = ((x >> shifts) & 1).to(torch.uint8).reshape(x.shape[:-2] + (-1,))
    if count is not None:
        count = operator.index(count)
        n = bits.shape[-1]
        if count < 0:
            count = max(0, n + count)
        if count <= n:
            bits = bits[..., :count]
        else:
            bits = torch.cat([bits, bits.new_zeros(bits.shape[:-1] + (count - n,))], dim=-1)
    return wrap(bits.movedim(-1, axis).contiguous())


