"""``ndarray.flat``: NumPy's flat iterator over an xp array (numpy.flatiter / CuPy's flatiter)."""
import numpy as np
import torch

from . import _indexing
from ._convert import tensor_of


class flatiter:
    """``a.flat``: 1-d view of an array in C order (matches numpy.flatiter). Reads return arrays
    (0-d for an integer index); writes go to the array; a value shorter than the selection repeats
    as NumPy's does."""

    def __init__(self, a, wrap):
        self._a = a
        self._wrap = wrap  # tensor -> xp.ndarray (npudist.xp._core.wrap; passed in, this module sits below it)
        self.index = 0

    @property
    def base(self):
        return self._a

    def __len__(self):
        return self._a._t.numel()

    def __iter__(self):
        return self

    def __next__(self):
        t = self._a._t
        if self.index >= t.numel():
            raise StopIteration
        i = self.index
        self.index += 1
        return self._wrap(t.reshape(-1)[i])

    @staticmethod
    def _key(key):
        if key is None:
            raise IndexError("only integers, slices (`:`), ellipsis (`...`) and integer or boolean arrays are "
                             "valid indices")
        if type(key) is tuple:
            if len(key) != 1:
                raise IndexError("too many indices for a flat iterator")
            key = key[0]
        return key

    def __getitem__(self, key):
        return self._wrap(_indexing.getitem(self._a._t.reshape(-1), self._key(key)))

    def __setitem__(self, key, value):
        key = self._key(key)
        t = self._a._t
        idx = _indexing.getitem(torch.arange(t.numel(), device=t.device), key)
        v = tensor_of(value)
        v = v.reshape(-1).to(t.dtype)
        n = idx.numel()
        if v.numel() != n and n:
            if v.numel() == 0:
                raise ValueError("cannot assign an empty value to a non-empty flat selection")
            v = v.repeat((n + v.numel() - 1) // v.numel())[:n]
        if t.is_contiguous():
            t.view(-1)[idx.reshape(-1)] = v
        else:
            coords = torch.unravel_index(idx.reshape(-1), t.shape)
            t.index_put_(coords, v)

    def copy(self):
        """A flattened copy (matches numpy.flatiter.copy)."""
        return self._wrap(self._a._t.reshape(-1).clone())

    def __array__(self, dtype=None, copy=None):
        return np.asarray(self.copy(), dtype=dtype)
