"""NumPy indexing on torch tensors: basic slicing (negative steps too), integer-array and boolean
indexing, None/Ellipsis; the rules are NumPy's ("Indexing on ndarrays" in the NumPy manual)."""
import operator

import numpy as np
import torch

from . import _negview
from ._convert import ArrayBase, as_tensor
from ._overlap import unaliased

_INDEX_ERROR = ("only integers, slices (`:`), ellipsis (`...`), numpy.newaxis (`None`) and integer or "
                "boolean arrays are valid indices")
_ARRAY_DTYPE_ERROR = "arrays used as indices must be of integer (or boolean) type"


def _slice_part(v):
    if v is None:
        return None
    try:
        return operator.index(v)
    except TypeError:
        raise TypeError(f"slice indices must be integers or None or have an __index__ method, got {v!r}") from None


def _item(k):
    """One key item -> int, bool, slice, None, Ellipsis or a torch int/bool tensor."""
    tp = type(k)
    if tp is int or tp is bool or k is None or k is Ellipsis:
        return k
    if tp is slice:
        if (type(k.start) in (int, type(None)) and type(k.stop) in (int, type(None))
                and type(k.step) in (int, type(None))):
            return k
        return slice(_slice_part(k.start), _slice_part(k.stop), _slice_part(k.step))
    if isinstance(k, np.bool_):
        return bool(k)
    if isinstance(k, (np.integer,)):
        return int(k)
    if isinstance(k, ArrayBase):
        t = k._t
    elif isinstance(k, torch.Tensor):
        t = k
    elif isinstance(k, (list, np.ndarray)):
        a = np.asarray(k) if type(k) is list else k
        if a.dtype.kind not in "biu":
            if type(k) is list and a.size == 0:
                a = a.astype(np.int64)     # [] and [[]]: empty integer index arrays (NumPy)
            else:   # NumPy's messages: a list of non-integers is no index, an array of them no index array
                raise IndexError(_INDEX_ERROR if type(k) is list else _ARRAY_DTYPE_ERROR)
        t = as_tensor(a)
    elif hasattr(k, "__index__"):
        return operator.index(k)
    else:
        raise IndexError(_INDEX_ERROR)
    if t.dtype == torch.bool:
        return t
    if t.is_floating_point() or t.is_complex():
        raise IndexError(_ARRAY_DTYPE_ERROR)
    if t.dtype != torch.int64:
        t = t.long()
    return t


def needs_flip(items):
    return any(type(k) is slice and k.step is not None and k.step < 0 for k in items)


def _positive(s, n):
    start, stop, step = s.indices(n)
    count = len(range(start, stop, step))
    if count == 0:
        return slice(0, 0)
    last = start + (count - 1) * step
    return slice(last, start + 1, -step)


def _split_flip(items, shape):
    """Applies negative-step slices first (as positive slices + flip): returns (key for the flipped
    tensor with those slices made full, slice key, dims to flip)."""
    ndim = len(shape)
    consumed = 0
    for k in items:
        if k is None or k is Ellipsis:
            continue
        consumed += k.ndim if isinstance(k, torch.Tensor) and k.dtype == torch.bool else 1
    key_a, key_b, flips = [], [], []
    dim = 0
    for k in items:
        if k is Ellipsis:
            n = ndim - consumed
            key_a.extend([slice(None)] * n)
            key_b.append(Ellipsis)
            dim += n
            continue
        if k is None:
            key_b.append(None)
            continue
        if type(k) is slice and k.step is not None and k.step < 0:
            if dim >= ndim:
                raise IndexError(f"too many indices for array: array is {ndim}-dimensional")
            key_a.append(_positive(k, shape[dim]))
            flips.append(dim)
            key_b.append(slice(None))
            dim += 1
            continue
        n = k.ndim if isinstance(k, torch.Tensor) and k.dtype == torch.bool else 1
        key_a.extend([slice(None)] * n)
        key_b.append(k)
        dim += n
    return tuple(key_a), tuple(key_b), flips


def normalize_key(key):
    if type(key) is tuple:
        return tuple(_item(k) for k in key)
    return (_item(key),)


def getitem(t, key):
    """t[key] with NumPy semantics. Basic indexing returns a view, except that a negative-step
    slice returns a copy (torch tensors cannot have negative strides)."""
    return getitem_items(t, normalize_key(key))


def getitem_items(t, items):
    """getitem with the key already normalised (normalize_key)."""
    if needs_flip(items):
        key_a, key_b, flips = _split_flip(items, t.shape)
        t = t[key_a].flip(flips)
        items = key_b
    return index(t, items)


def index(t, items):
    """t[items] for normalised items without a negative step (torch's indexing)."""
    t, items = numpy_placement(t, items)
    return t[items[0] if len(items) == 1 and items[0] is not Ellipsis and not isinstance(items[0], torch.Tensor) else items]


def _check_masks(t, items):
    """NumPy's IndexError for a boolean index whose shape does not fit the axes it covers (an axis of
    the mask may also be 0 when the mask is empty)."""
    used = sum(k.ndim if isinstance(k, torch.Tensor) and k.dtype == torch.bool else
               (0 if k is None or k is Ellipsis or type(k) is bool else 1) for k in items)
    d = 0
    for k in items:
        if k is Ellipsis:
            d += max(t.ndim - used, 0)
        elif isinstance(k, torch.Tensor) and k.dtype == torch.bool:
            for j, m in enumerate(k.shape):
                if d + j < t.ndim and m != t.shape[d + j] and (m or k.numel()):
                    raise IndexError(f"boolean index did not match indexed array along axis {d + j}; size of axis "
                                     f"is {t.shape[d + j]} but size of corresponding boolean axis is {m}")
            d += k.ndim
        elif k is not None and type(k) is not bool:   # (a scalar bool adds an axis, as None)
            d += 1


def numpy_placement(t, items):
    """(tensor, items) whose torch indexing gives NumPy's result for t[items] (the same memory: a
    permuted view of t, so setitem writes through). Where torch differs from NumPy: a boolean
    index of size 0 selects nothing whatever its shape (NumPy; torch checks the shape), and when
    index arrays are not adjacent (a slice, None or Ellipsis -- even one standing for no axis --
    between two of them, integers counting as index arrays) their broadcast axes come first
    (NumPy's rule; torch keeps integers basic and ignores an empty Ellipsis)."""
    if not any(isinstance(k, torch.Tensor) for k in items):
        return t, items
    if any(isinstance(k, torch.Tensor) and k.dtype == torch.bool and k.ndim for k in items):
        _check_masks(t, items)
    if any(isinstance(k, torch.Tensor) and k.dtype == torch.bool and k.ndim and not k.numel() for k in items):
        new = []
        for k in items:   # an empty mask is its (empty) integer index arrays, one per axis it covers
            empty_mask = isinstance(k, torch.Tensor) and k.dtype == torch.bool and k.ndim and not k.numel()
            new.extend(k.nonzero(as_tuple=True) if empty_mask else (k,))
        items = tuple(new)
    adv = [i for i, k in enumerate(items) if isinstance(k, torch.Tensor) or type(k) is int]
    if adv[-1] - adv[0] + 1 == len(adv):
        return t, items          # adjacent: torch places them as NumPy does
    width = [(k.ndim if k.dtype == torch.bool else 1) if isinstance(k, torch.Tensor) else
             (0 if k is None or k is Ellipsis or type(k) is bool else 1) for k in items]
    rest = t.ndim - sum(width)
    if rest < 0 or sum(1 for k in items if k is Ellipsis) > 1:
        return t, items          # torch raises IndexError
    dims, d = [], 0
    for k, w in zip(items, width):
        if k is Ellipsis:
            w = rest
            rest = 0
        dims.append(list(range(d, d + w)))
        d += w
    advset = set(adv)
    perm = [x for i in adv for x in dims[i]]
    perm += [x for i in range(len(items)) if i not in advset for x in dims[i]] + list(range(d, t.ndim))
    key = tuple(items[i] for i in adv) + tuple(k for i, k in enumerate(items) if i not in advset)
    return t.permute(perm), key


def setitem(t, key, value):
    """t[key] = value (a tensor or Python scalar already converted to t's dtype rules). A value
    overlapping t's memory is read as if copied first (NumPy's rule)."""
    items = normalize_key(key)
    value = unaliased(value, t)
    if needs_flip(items):
        idx = torch.arange(t.numel(), device=t.device).view(t.shape)
        sel = getitem(idx, items)
        coords = torch.unravel_index(sel, t.shape) if t.ndim else ()
        if isinstance(value, torch.Tensor):
            value = value.to(t.dtype).broadcast_to(sel.shape)
        else:
            value = torch.full(sel.shape, value, dtype=t.dtype, device=t.device)
        if t.ndim:
            t.index_put_(coords, value)
        else:
            t.copy_(value)
        return
    if isinstance(value, torch.Tensor) and value.dtype != t.dtype:
        value = value.to(t.dtype)
    t, items = numpy_placement(t, items)
    try:
        t[items] = value
    except RuntimeError:
        if isinstance(value, torch.Tensor):
            target = tuple(t[items].shape)
            try:
                fits = np.broadcast_shapes(tuple(value.shape), target) == target
            except ValueError:
                fits = False
            if not fits:   # NumPy's error class and message
                raise ValueError(f"could not broadcast input array from shape {tuple(value.shape)} into shape "
                                 f"{target}") from None
        raise


def normalize_index_array(idx, n):
    """Integer index tensor checked against an axis of size n (IndexError as NumPy), negatives made
    positive."""
    if idx.dtype == torch.bool:
        raise IndexError("arrays used as indices must be of integer type")
    idx = idx.long()
    if not idx.numel():
        return idx
    lo, hi = torch.aminmax(idx)
    lo, hi = int(lo), int(hi)
    if hi >= n or lo < -n:
        raise IndexError(f"index {hi if hi >= n else lo} is out of bounds for axis with size {n}")
    return torch.where(idx < 0, idx + n, idx) if lo < 0 else idx


def _is_basic(items):
    for k in items:
        tp = type(k)
        if not (tp is int or tp is slice or k is None or k is Ellipsis):
            return False
    return True


def flip_view(src, dims, items):
    """Basic indexing (ints, slices of any step, None, Ellipsis) of the view ``flip(src, dims)``
    as a positive-stride view of ``src``'s memory: returns (view, reversed axes of the result).
    ``items``: a normalize_key result. None when ``items`` holds an index array (advanced
    indexing copies, as NumPy's). Raises IndexError as NumPy for out-of-range ints / too many
    indices."""
    if not _is_basic(items):
        return None
    shape = src.shape
    ndim = len(shape)
    used = sum(1 for k in items if k is not None and k is not Ellipsis)
    if used > ndim:
        raise IndexError(f"too many indices for array: array is {ndim}-dimensional, but {used} were indexed")
    if sum(1 for k in items if k is Ellipsis) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    full = []
    for k in items:
        if k is Ellipsis:
            full.extend([slice(None)] * (ndim - used))
        else:
            full.append(k)
    if Ellipsis not in items:
        full.extend([slice(None)] * (ndim - used))
    flipped = set(dims)
    key, out = [], []
    d = 0
    for k in full:
        if k is None:
            key.append(None)
            out.append(False)
            continue
        n = shape[d]
        rev = d in flipped
        if type(k) is int:
            i = k + n if k < 0 else k
            if not 0 <= i < n:
                raise IndexError(f"index {k} is out of bounds for axis {d} with size {n}")
            key.append(n - 1 - i if rev else i)
        else:
            r = range(*k.indices(n))
            cnt = len(r)
            if cnt == 0:
                key.append(slice(0, 0))
                out.append(False)
            else:
                first = n - 1 - r.start if rev else r.start
                step = -r.step if rev else r.step
                if step > 0:
                    key.append(slice(first, first + step * (cnt - 1) + 1, step))
                    out.append(False)
                else:
                    last = first + step * (cnt - 1)
                    key.append(slice(last, first + 1, -step))
                    out.append(True)
        d += 1
    v = src[tuple(key)]
    return v, tuple(i for i, f in enumerate(out) if f)


def neg_getitem(t, items):
    """(result, is_view) of ``a[key]`` for an xp array's tensor ``t`` that is a negative-stride view,
    or a key with a negative step (items: the normalised key): basic indexing gives a view of t's
    memory (negative strides held by npudist.xp._negview; is_view True, the caller sets its base),
    index arrays a copy. NotImplementedError for a negative-step slice of a reshaped or transposed
    negative-stride view (it would not write through)."""
    if type(t) is _negview.NegStrided:
        info = _negview.mirror_info(t)
        if info is None:   # a later view of a mirror (a[::-1].reshape(...)): torch views of it write through
            if needs_flip(items):
                raise NotImplementedError(
                    "xp: a negative-step slice of a reshaped/transposed negative-stride view is not supported "
                    "(it would not write through); index xp.ascontiguousarray(x) for a copy")
            return getitem_items(t, items), False
        src, dims = info
    else:
        src, dims = t, ()
    r = flip_view(src, dims, items)
    if r is None:
        return getitem_items(t, items), False
    v, nd = r
    return (_negview.make(v, nd) if nd else v), True
