"""Negative-stride views (``a[::-1]``, ``flip``, ``a[:, 1::-1]``) over torch tensors, which cannot
have negative strides.

NumPy and CuPy return views with negative strides: writes through them change the viewed array.
xp holds such a view as an ``xp.ndarray`` whose tensor is a :class:`NegStrided`: a tensor subclass
over a contiguous *mirror* of the view's elements that keeps, in ``_xp_m``:

* ``src``: the positive-stride view over the viewed array's memory (``as_strided`` of the same
  storage, each reversed axis starting at its other end), and ``dims``: the reversed axes;
  ``mirror == flip(src, dims)``, element for element;
NumPy's strides (``src``'s with the reversed axes negated) and the address of the first element
(``a.data.ptr``) follow from ``src`` and ``dims`` (own_layout, first_address).

The invariant is kept by ``__torch_function__``: every torch op that reads a NegStrided (or a view
of its mirror, which stays a NegStrided) first copies ``flip(src)`` into the mirror, so reads see
the memory as it is now however it was written (torch, NumPy host loops, kernels); when the op
wrote the mirror (its version counter moved: in-place ops, ``out=``, ``copy_``, ``__setitem__``,
``index_put_``, ``scatter_``, views of the mirror written in place), the mirror is written back
through ``src``. So every xp write path that writes ``a._t`` by a torch op writes into the viewed
array. Metadata queries (shape, dtype, strides, ...) touch no data.

What never sees a NegStrided's memory directly: the NumPy host loops and the C fast paths accept
only plain (or xp's unsigned) tensors, so they decline and the torch path runs; user kernels
(``xp.ElementwiseKernel`` & co) refuse it with a TypeError; DLPack exports a copy.

Ordinary arrays pay nothing: nothing here runs unless an array is a negative-stride view.
"""
import torch

from ._unsigned import UINT, UIntTensor

_BITS = {torch.uint16: torch.int16, torch.uint32: torch.int32, torch.uint64: torch.int64}
_NoTF = torch._C.DisableTorchFunction   # (DisableTorchFunctionSubclass makes npu ops ~30x slower here)
T = torch.Tensor


def _flip_into(dst, src, dims):
    """dst <- flip(src, dims) on plain tensors (unsigned through the same-width signed view:
    PyTorch's CPU flip has no uint64 kernel)."""
    b = _BITS.get(src.dtype)
    if b is not None:
        dst.view(b).copy_(src.view(b).flip(dims))
    else:
        dst.copy_(src.flip(dims))


class _Mirror:
    __slots__ = ("src", "dims", "flat")

    def __init__(self, src, dims, flat):
        self.src, self.dims, self.flat = src, dims, flat


# ops that read metadata only: no refresh, plain results
_META = set()
_IS_CONTIGUOUS = T.is_contiguous
_CONTIGUOUS = T.contiguous
_BASE = T._base.__get__
for _n in ("shape", "dtype", "device", "ndim", "layout", "requires_grad", "is_leaf", "grad_fn",
           "itemsize", "nbytes", "is_cuda", "is_cpu", "is_sparse", "is_quantized", "is_meta", "names"):
    _p = getattr(T, _n, None)
    if _p is not None and hasattr(_p, "__get__"):
        _META.add(_p.__get__)
for _n in ("size", "stride", "dim", "numel", "nelement", "element_size", "data_ptr",
           "storage_offset", "is_complex", "is_floating_point", "is_signed", "is_conj", "is_neg", "untyped_storage",
           "__len__", "is_inference", "get_device", "is_pinned", "__hash__", "__dlpack_device__"):
    _f = getattr(T, _n, None)
    if _f is not None:
        _META.add(_f)
_META = frozenset(_META)


def _unwrap(x, ms):
    tp = type(x)
    if tp is NegStrided:
        m = x._xp_m
        if all(m is not k for k in ms):
            ms.append(m)
        with _NoTF():
            return x.as_subclass(UIntTensor if x.dtype in UINT else T)
    if tp is tuple or tp is list:
        if any(type(v) in (NegStrided, tuple, list, dict) for v in x):
            return tp(_unwrap(v, ms) for v in x)
        return x
    if tp is dict:
        return {k: _unwrap(v, ms) for k, v in x.items()}
    return x


def _rewrap(r, ms):
    if isinstance(r, torch.Tensor):
        with _NoTF():
            try:
                p = r.untyped_storage().data_ptr()
            except RuntimeError:
                return r
            for m in ms:
                if p == m.flat.untyped_storage().data_ptr() and r.device == m.flat.device:
                    v = r.as_subclass(NegStrided)
                    v._xp_m = m
                    return v
        return r
    tp = type(r)
    if tp is tuple or tp is list:
        return tp(_rewrap(v, ms) for v in r)
    if tp.__module__ == "torch.return_types":
        return tp([_rewrap(v, ms) for v in r])
    return r


class NegStrided(torch.Tensor):
    """The tensor of an xp array that is a negative-stride view (see the module docstring): a
    mirror of the view's elements kept equal to the viewed memory on every torch op, written back
    when an op writes it. Shapes, dtypes and values are those of the view."""

    _xp_keeps_class = True   # npudist.xp._unsigned.as_uint leaves it as it is

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        if kwargs is None:
            kwargs = {}
        if func in _META:
            with _NoTF():
                return func(*args, **kwargs)
        if func is _IS_CONTIGUOUS:
            # NumPy's sense: reversed axes are not contiguous (so copies asked for contiguity copy)
            with _NoTF():
                return args[0].numel() <= 1
        if func is _CONTIGUOUS:
            with _NoTF():
                n = args[0].numel()
            if n > 1:   # a contiguous copy, as NumPy's ascontiguousarray of a negative-stride view
                func, args, kwargs = T.clone, args[:1], {"memory_format": torch.contiguous_format}
        if func is _BASE:
            with _NoTF():
                return _rewrap(func(*args), [args[0]._xp_m])
        ms = []
        args = _unwrap(args, ms)
        kwargs = _unwrap(kwargs, ms)
        with _NoTF():
            for m in ms:
                _flip_into(m.flat, m.src, m.dims)
            vers = [m.flat._version for m in ms]
        try:
            res = func(*args, **kwargs)
        finally:
            with _NoTF():
                for m, v in zip(ms, vers):
                    if m.flat._version != v:
                        _flip_into(m.src, m.flat, m.dims)
        return _rewrap(res, ms)


def is_neg(t):
    """Whether tensor t is (a view of) a negative-stride view's mirror."""
    return type(t) is NegStrided


def make(src, dims):
    """The NegStrided of the view ``flip(src, dims)``: ``src`` a positive-stride view over the
    viewed memory, ``dims`` the reversed axes (non-empty)."""
    if type(src) is not T:
        src = src.as_subclass(T)
    with _NoTF():   # (filled by the first op that reads it, as by every op)
        flat = torch.empty(src.shape, dtype=src.dtype, device=src.device)
        t = flat.as_subclass(NegStrided)
    t._xp_m = _Mirror(src, tuple(dims), flat)
    return t


def mirror_info(t):
    """(src, dims, own) of a NegStrided whose mirror is the whole view (not a later view of the
    mirror), else None."""
    m = t._xp_m
    with _NoTF():
        if t.data_ptr() == m.flat.data_ptr() and tuple(t.shape) == tuple(m.flat.shape) and \
                tuple(t.stride()) == tuple(m.flat.stride()):
            return m.src, m.dims
    return None


def whole(t):
    """The NegStrided of the whole view whose mirror t is (or is a view of)."""
    m = t._xp_m
    with _NoTF():
        w = m.flat.as_subclass(NegStrided)
    w._xp_m = m
    return w


def first_address(t):
    """Address of the first element of the negative-stride view t (NumPy's / CuPy's data pointer)."""
    info = mirror_info(t)
    if info is None:
        with _NoTF():
            return t.data_ptr()
    src, dims = info
    with _NoTF():
        shape, st, off = own_layout(src, dims)
        return src.data_ptr() + (off - src.storage_offset()) * src.element_size()


def source(t):
    """A plain positive-stride tensor over the memory the negative-stride view t covers: for the
    whole view its src (the same elements), for a later view of its mirror the whole view's src
    (a superset: memory-overlap answers stay conservative)."""
    return t._xp_m.src


def own_layout(src, dims):
    """NumPy's (shape, element strides, element offset of the first element) of flip(src, dims)."""
    with _NoTF():
        shape = tuple(src.shape)
        st = list(src.stride())
        off = src.storage_offset()
        for d in dims:
            if shape[d] > 0:
                off += (shape[d] - 1) * st[d]
            st[d] = -st[d]
    return shape, tuple(st), off


def strides_of(t):
    """NumPy's element strides of tensor t: a negative-stride view's own (signed) strides, else
    t.stride() (for later views of a mirror: the mirror's)."""
    if type(t) is NegStrided:
        info = mirror_info(t)
        if info is not None:
            return own_layout(*info)[1]
        with _NoTF():
            return t.stride()
    return t.stride()


def permute(t, perm):
    """(result, is_view): the axes of negative-stride view ``t`` permuted, over the same memory
    (is_view True: the caller sets the result's base) or, for a later view of a mirror, torch's
    permute of it (is_view False, as before)."""
    info = mirror_info(t)
    if info is None:
        return t.permute(*perm), False
    src, dims = info
    inv = {p: i for i, p in enumerate(perm)}
    return make(src.permute(*perm), tuple(sorted(inv[d] for d in dims))), True
