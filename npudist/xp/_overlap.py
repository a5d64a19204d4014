"""Memory bounds of npu tensors, and the copy NumPy makes when an assignment's source overlaps
its destination (NumPy's assignment behaves as if the source were copied first; PyTorch's
``copy_``/``index_put_`` either read half-written values or refuse the overlap)."""
import torch


def tensor_bounds(t):
    """[first, last) byte addresses tensor ``t`` touches (None when it has no elements)."""
    if t.numel() == 0:
        return None
    size = t.element_size()
    lo = hi = 0
    for n, st in zip(t.shape, t.stride()):
        if st >= 0:
            hi += (n - 1) * st
        else:
            lo += (n - 1) * st
    return t.data_ptr() + lo * size, t.data_ptr() + (hi + 1) * size


def unaliased(src, dst):
    """``src`` as it may be assigned into ``dst``: a copy when the two tensors' memory ranges
    overlap and src is not dst's exact view (bounds only, as numpy.may_share_memory: an interleaved
    pair such as a[::2], a[1::2] is copied too, which is harmless); src itself otherwise. Python
    scalars pass through."""
    if not isinstance(src, torch.Tensor) or src is dst:
        return src
    rs = tensor_bounds(src)
    if rs is None:
        return src
    rd = tensor_bounds(dst)
    if rd is None or not (rs[0] < rd[1] and rd[0] < rs[1]):
        return src
    if src.data_ptr() == dst.data_ptr() and src.shape == dst.shape and src.stride() == dst.stride():
        return src     # x[...] = x: element i reads and writes the same place
    return src.clone()
