"""xp.ndarray: a NumPy-semantics array whose memory is an npu tensor (``a._t``), at the top of the
core package (npudist.xp._core).

Layering (no import cycle; tests/xp/test_structure.py checks it): _dtypes, _config, _unsigned ->
_convert (operand conversion, axes, memory order) -> _indexing (index normalisation), _negview (negative-stride views), _host
(NumPy's loops on npu memory), _ufunc (the ufunc engine), _ufunc_kernels -> _core._array (wrap, result, the ufunc
table) -> _core._reductions, _sorting, _statistics, _math, _linalg, _manipulation, _indexing_routines,
_creation, _namespace, _ufuncs (the routines the methods are made of) -> this module.
Right after the class, ``_array.register`` records it, so the routines below make arrays of it.
"""
import operator
import pickle
import warnings

import numpy as np
import torch

from .. import _bytes_views, _host, _indexing, _negview, _object_compare, _protocols
from .._convert import (  # noqa: F401  (re-exported)
    ArrayBase,
    as_tensor,
    check_order,
    check_same_kind,
    f64,
    f_layout,
    in_order,
    is_f_contiguous,
    normalize_axes,
    normalize_axis,
    operand,
    result_dtype,
    tensor_of,
    to_numpy,
)
from .._device import Device, as_torch_device, current_device_id
from .._dtypes import NP_TO_TORCH, TORCH_TO_NP, cast, complex_to_real, to_dtype
from .._flatiter import flatiter
from .._indexing import normalize_index_array  # noqa: F401  (re-exported)
from .._memory import Flags, MemoryPointer
from .._unsigned import as_uint, owns_memory
from . import (
    _array,
    _creation,
    _indexing_routines,
    _linalg,
    _manipulation,
    _math,
    _namespace,
    _operators,
    _reductions,
    _sorting,
    _statistics,
)
from ._array import result, wrap  # noqa: F401  (result: re-exported)

_NEG = _negview.NegStrided


_PY_RANGE_CHECK = {torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8, torch.uint16, torch.uint32,
                   torch.uint64}


def _scalar_value(value, t):
    """Python scalar stored into an array of t's dtype: NumPy 2 raises where the value cannot be held."""
    tp = type(value)
    if tp is int and t.dtype in _PY_RANGE_CHECK:
        info = torch.iinfo(t.dtype)
        if not info.min <= value <= info.max:
            raise OverflowError(f"Python integer {value} out of bounds for {TORCH_TO_NP[t.dtype]}")
    elif tp is complex and not t.is_complex():
        raise TypeError(f"cannot store a complex value into an array of dtype {TORCH_TO_NP[t.dtype]}; "
                        f"use .real / .imag or a complex array")
    elif tp is float and not (t.is_floating_point() or t.is_complex()) and value != value:
        raise ValueError(f"cannot convert float NaN to integer (array dtype {TORCH_TO_NP[t.dtype]})")
    return value


_OPS = _array.OPS   # the one ufunc table (filled by _ufuncs at import; the class is given to it below)


class ndarray(ArrayBase):
    """N-dimensional array on the rank's npu with NumPy semantics (matches numpy.ndarray).

    Construct with xp.asarray / xp.array / creation functions; ``xp.ndarray(shape, dtype)``
    allocates an uninitialised array like numpy.ndarray(shape, dtype). The torch tensor holding
    the memory is ``a._t`` (public view of it: ``torch.from_dlpack(a)`` or ``xp.to_torch(a)``)."""

    __slots__ = ()
    __array_priority__ = 100

    def __init__(self, shape, dtype=float, buffer=None, offset=0, strides=None, order="C", *, memptr=None):
        if isinstance(buffer, MemoryPointer) and memptr is None:    # CuPy's order: (shape, dtype, memptr, strides)
            buffer, memptr = None, buffer
            if isinstance(offset, (tuple, list)) and strides is None:
                strides, offset = offset, 0
        if memptr is not None:      # CuPy's constructor: a view of the memory memptr points into
            from .._memory import view_of_pointer
            self._t = view_of_pointer(memptr, shape, dtype, strides, check_order(order, ("C", "F")))
            return
        if buffer is not None or strides is not None:
            raise NotImplementedError("xp.ndarray(buffer=..., strides=...) is not supported; use xp.asarray "
                                      "(or memptr=a.data, as CuPy's, for a view of npu memory)")
        dt = to_dtype(dtype)
        from .._config import device
        shape = (shape,) if isinstance(shape, int) else tuple(shape)
        t = torch.empty(shape, dtype=NP_TO_TORCH[dt], device=device())
        if check_order(order, ("C", "F")) == "F":
            t = f_layout(t)
        self._t = as_uint(t)

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        """NEP 13, as cupy.ndarray's: NumPy's ufuncs on xp arrays run xp's (_protocols.array_ufunc)."""
        return _protocols.array_ufunc(ufunc, method, inputs, kwargs)

    # ---- attributes -------------------------------------------------------------------------
    @property
    def dtype(self):
        return TORCH_TO_NP[self._t.dtype]

    @property
    def shape(self):
        return tuple(self._t.shape)

    @shape.setter
    def shape(self, value):
        shape = _shape_arg(value, self._t.numel())
        try:
            self._t = self._t.view(shape)
        except RuntimeError:
            # NumPy's error: the memory layout cannot take the shape without a copy
            raise AttributeError("Incompatible shape for in-place modification. Use `.reshape()` to make a "
                                 "copy with the desired shape.") from None

    @property
    def ndim(self):
        return self._t.ndim

    @property
    def size(self):
        return self._t.numel()

    @property
    def itemsize(self):
        return self._t.element_size()

    @property
    def nbytes(self):
        return self._t.numel() * self._t.element_size()

    @property
    def strides(self):
        t = self._t
        s = t.element_size()
        if type(t) is _NEG:
            info = _negview.mirror_info(t)
            if info is not None:
                return tuple(x * s for x in _negview.own_layout(info[0], info[1])[1])
        return tuple(x * s for x in t.stride())

    @property
    def flags(self):
        return Flags(self._t)

    @property
    def base(self):
        t = self._t
        if type(t) is _NEG:
            # a negative-stride view (npudist.xp._negview): the owner it was made from, or its whole view
            src = getattr(self, "_b", None)
            return src if src is not None else wrap(_negview.whole(t))
        b = t._base
        if b is None or owns_memory(t):
            return None
        # the xp array that owns the memory, followed through views (NumPy's collapsed base)
        src = getattr(self, "_b", None)
        while src is not None and not owns_memory(src._t):
            src = getattr(src, "_b", None)
        if src is not None and src._t.untyped_storage().data_ptr() == b.untyped_storage().data_ptr():
            return src
        return wrap(b)

    @property
    def data(self):
        """Where the array's memory is (as cupy.ndarray.data): ``a.data.ptr`` is the address of the
        first element in npu memory, ``a.data.device_id`` the npu index."""
        t = self._t
        mp = MemoryPointer(t)
        if type(t) is _NEG:
            mp.ptr = _negview.first_address(t)
        return mp

    @property
    def flat(self):
        """Flat iterator over the array in C order (matches numpy.ndarray.flat / cupy's flatiter):
        ``a.flat[i]``, ``a.flat[1:4] = v`` (writes through), ``len``, iteration, ``copy()``."""
        return flatiter(self, wrap)

    @property
    def data_ptr(self):
        """Address of the first element in npu memory (the tensor's data_ptr)."""
        t = self._t
        return _negview.first_address(t) if type(t) is _NEG else t.data_ptr()

    @property
    def T(self):
        t = self._t
        if t.ndim <= 1:
            return wrap(t)
        if type(t) is _NEG:
            return _neg_permute(self, t, tuple(range(t.ndim - 1, -1, -1)))
        # (2-d: Tensor.t() takes no arguments to parse, the cheaper call for a 16-element copy's a.T)
        return wrap(t.t() if t.ndim == 2 else t.permute(*range(t.ndim - 1, -1, -1)))

    @property
    def mT(self):
        if self._t.ndim < 2:
            raise ValueError("matrix transpose with ndim < 2 is undefined")
        return wrap(self._t.transpose(-1, -2))

    @property
    def real(self):
        """The real part: a view of a complex array (base: the array), the array itself otherwise (NumPy)."""
        t = self._t
        if not t.is_complex():
            return self
        return self._part_view(torch.real(t))

    def _part_view(self, v):
        res = wrap(v)
        res._b = self if owns_memory(self._t) else getattr(self, "_b", None)
        return res

    @real.setter
    def real(self, value):
        self.real[...] = value

    @property
    def imag(self):
        t = self._t
        if t.is_complex():
            return self._part_view(torch.imag(t))
        return wrap(torch.zeros_like(t))

    @imag.setter
    def imag(self, value):
        if not self._t.is_complex():
            raise TypeError("array does not have imaginary part to set")
        self.imag[...] = value

    @property
    def device(self):
        """The ``xp.Device`` of the npu holding the array (CuPy's ``a.device``; it compares equal to
        ``torch.device('npu:N')`` as the Array API's ``x.device`` is used)."""
        return Device(self._t.device.index or 0)

    def to_device(self, device, /, *, stream=None):
        """Array API: a copy on another npu (``'npu:1'``, a torch.device, an xp.Device); 'cpu' is not an xp device."""
        device = as_torch_device(device)
        if device.type != "npu":
            raise ValueError(f"xp arrays live on npus; to_device({device}) is not possible - use xp.asnumpy(a) "
                             f"or xp.to_torch(a).cpu() for host data")
        return wrap(self._t.to(device))

    # ---- conversion -------------------------------------------------------------------------
    def __array__(self, dtype=None, copy=None):
        if copy is False:
            raise ValueError("an xp array cannot be turned into a NumPy array without a copy (copy=False)")
        a = to_numpy(self._t)
        return a if dtype is None else a.astype(dtype, copy=False)

    def get(self, stream=None, out=None):
        """NumPy copy of the array (as cupy.ndarray.get); same as xp.asnumpy(a)."""
        a = to_numpy(self._t)
        if out is not None:
            out[...] = a
            return out
        return a

    def set(self, arr):
        """Copies a NumPy array of the same shape into this array (as cupy.ndarray.set)."""
        self._t.copy_(as_tensor(np.asarray(arr)).to(self._t.dtype))

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        """DLPack export of the npu memory (_protocols.dlpack_export: consumers get an npu tensor over
        the same memory; negative-stride views and other devices export a copy, or BufferError)."""
        return _protocols.dlpack_export(self._t, self.__dlpack_device__(), max_version, dl_device, copy)

    def __dlpack_device__(self):
        # kDLExtDev: how torch itself tags PrivateUse1 tensors in DLPack capsules.
        return (int(torch.utils.dlpack.DLDeviceType.kDLExtDev), self._t.device.index or 0)

    def __array_namespace__(self, *, api_version=None):
        """The Array API namespace (npudist.xp's, registered in _namespace by npudist.xp's import;
        ValueError for an api_version it does not implement)."""
        return _namespace.namespace(api_version)

    def tolist(self):
        return to_numpy(self._t).tolist()

    def item(self, *args):
        if not args:
            if self._t.numel() != 1:
                raise ValueError("can only convert an array of size 1 to a Python scalar")
            return to_numpy(self._t).reshape(()).item()
        return to_numpy(self._t).item(*args)

    def tobytes(self, order="C"):
        return to_numpy(self._t).tobytes(order)

    def byteswap(self, inplace=False):
        """Each element's bytes reversed (matches numpy.ndarray.byteswap: complex values swap their
        real and imaginary parts separately; bool and 1-byte dtypes are unchanged). ``inplace=True``
        swaps a's memory and returns a; otherwise a new array in memory order 'A' (as NumPy's)."""
        c = _bytes_views.byteswapped(self._t)
        if not inplace:
            return wrap(c)
        self._t.copy_(c)
        return self

    @_host.numpy_first(np.ndarray.astype, lambda: ndarray)   # NumPy's cast on npu memory first (docs/xp.md)
    def astype(self, dtype, order="K", casting="unsafe", subok=True, copy=True):
        """Cast to dtype (matches numpy.ndarray.astype: casting rule, memory order, copy=False)."""
        dt = to_dtype(dtype)
        order = check_order(order)
        if order != "K":
            r = self.astype(dt, casting=casting, copy=copy)
            t = in_order(r._t, order, like=self._t)
            return r if t is r._t else wrap(t)
        if casting != "unsafe" and not np.can_cast(self.dtype, dt, casting):
            raise TypeError(f"cannot cast array data from {self.dtype} to {dt} according to the rule {casting!r}")
        tdt = NP_TO_TORCH[dt]
        if tdt == self._t.dtype:
            return wrap(self._t.clone()) if copy else self
        # NumPy's ComplexWarning for complex -> real; the cast itself is of a (torch's own warning
        # silenced), not of the real-part view complex_to_real returns: that view's memory is a's, and
        # cast() returns a tensor already of the target dtype as it is (the result would alias a)
        if complex_to_real(self._t, tdt, stacklevel=3) is not self._t:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)
                return wrap(cast(self._t, tdt))
        return wrap(cast(self._t, tdt))

    def copy(self, order="C"):
        """A copy in memory order 'C' (default), 'F', 'A' or 'K' (matches numpy.ndarray.copy), made on
        the current npu as CuPy's (``with xp.Device(1): b = a.copy()`` copies a onto npu 1)."""
        t = self._t
        dev = current_device_id()
        if (t.device.index or 0) != dev:
            return wrap(in_order(t.to(torch.device("npu", dev)), check_order(order)))
        return wrap(in_order(t, check_order(order), copy=True))

    def __copy__(self):
        return self.copy()

    def __deepcopy__(self, memo):
        return self.copy()

    def __reduce__(self):
        # pickled as the NumPy array of its values, rebuilt by asarray in the current npu
        return (_creation.asarray, (to_numpy(self._t),))

    def dump(self, file):
        """Pickles the array into ``file`` (matches ndarray.dump; _protocols.dump)."""
        _protocols.dump(self, file)

    def dumps(self):
        """The pickle of the array as bytes (matches ndarray.dumps)."""
        return pickle.dumps(self, protocol=2)

    def view(self, dtype=None, type=None):
        """The same memory seen with another dtype (matches numpy.ndarray.view(dtype)): with a
        different itemsize the last axis (unless of length 1 or the array empty) must be contiguous
        and is rescaled, other strides kept; the result does not own its memory and its base is
        the array owning it. NumPy's ValueErrors for 0-d arrays, non-contiguous last axes and sizes
        that do not divide. Views whose strides or offset are not multiples of the new itemsize
        (NumPy accepts them) raise ValueError: torch tensors count strides in elements."""
        if dtype is None:
            return wrap(self._t.view(self._t.shape))
        t, whole_storage = _bytes_views.dtype_view(self._t, NP_TO_TORCH[to_dtype(dtype)])
        res = wrap(t)
        if whole_storage:
            res._b = _owner(self)
        return res

    def fill(self, value):
        self._t.fill_(_scalar_value(value, self._t) if not isinstance(value, ndarray) else value._t)

    def __repr__(self):
        return repr(to_numpy(self._t))

    def __str__(self):
        return str(to_numpy(self._t))

    def __format__(self, spec):
        if self._t.ndim == 0:
            return format(self.item(), spec)
        return format(str(self), spec)

    # ---- Python protocol ----------------------------------------------------------------------
    def __len__(self):
        if self._t.ndim == 0:
            raise TypeError("len() of unsized object")
        return self._t.shape[0]

    def __iter__(self):
        if self._t.ndim == 0:   # raised by iter(a) itself, as NumPy's (not at the first next())
            raise TypeError("iteration over a 0-d array")
        return self._rows()

    def _rows(self):
        if type(self._t) is _NEG:   # rows of a negative-stride view: views with its strides
            for i in range(self._t.shape[0]):
                yield self[i]
            return
        for i in range(self._t.shape[0]):
            yield wrap(self._t[i])

    def __bool__(self):
        if self._t.numel() != 1:
            raise ValueError(f"The truth value of an array with {self._t.numel()} elements is ambiguous. "
                             f"Use a.any() or a.all()")
        return bool(self._t.item())

    def __int__(self):
        if self._t.ndim != 0:   # NumPy 2.4: 1-element arrays of 1 or more dimensions too
            raise TypeError("only 0-dimensional arrays can be converted to Python scalars")
        if self._t.is_complex():
            raise TypeError("int() of a complex array; use .real")
        return int(self._t.item())

    def __float__(self):
        if self._t.ndim != 0:   # NumPy 2.4: 1-element arrays of 1 or more dimensions too
            raise TypeError("only 0-dimensional arrays can be converted to Python scalars")
        if self._t.is_complex():
            raise TypeError("float() of a complex array; use .real")
        return float(self._t.item())

    def __complex__(self):
        if self._t.ndim != 0:   # NumPy 2.4: 1-element arrays of 1 or more dimensions too
            raise TypeError("only 0-dimensional arrays can be converted to Python scalars")
        return complex(self._t.item())

    def __index__(self):
        t = self._t
        if t.ndim != 0 or t.is_floating_point() or t.is_complex() or t.dtype == torch.bool:
            raise TypeError("only integer scalar arrays can be converted to a scalar index")
        return int(t.item())

    __hash__ = None

    def __contains__(self, value):
        return bool(_OPS["equal"](self, value)._t.any())

    # ---- indexing ------------------------------------------------------------------------------
    def __getitem__(self, key):
        if type(key) is ndarray and key._t.dtype == torch.bool:   # a[mask]: NumPy's on npu memory first (docs/xp.md)
            r = _mask_getitem(self, key)
            if r is not None:
                return r
        t = self._t
        items = _indexing.normalize_key(key)
        if type(t) is _NEG or _indexing.needs_flip(items):
            return _neg_getitem(self, t, items)
        t = _indexing.index(t, items)
        res = wrap(t)
        if t._base is not None:
            # a view: NumPy's base is the array that owns the memory (collapsed through views)
            res._b = self if owns_memory(self._t) else getattr(self, "_b", None)
        return res

    def __setitem__(self, key, value):
        t = self._t
        if isinstance(value, ndarray):
            v = value._t
        elif type(value) in (int, float, bool, complex):
            v = _scalar_value(value, t)
        else:
            v = as_tensor(value)
        _indexing.setitem(t, key, v)

    # ---- NumPy methods backed by the core's routines (and, for some, still a family module) ------
    def sum(self, axis=None, dtype=None, out=None, keepdims=False, initial=0, where=True):
        """Sum over axes (numpy.ndarray.sum; see xp.sum)."""
        return _reductions.sum(self, axis, dtype, out, keepdims, initial, where)

    def prod(self, axis=None, dtype=None, out=None, keepdims=False, initial=1, where=True):
        """Product over axes (numpy.ndarray.prod; see xp.prod)."""
        return _reductions.prod(self, axis, dtype, out, keepdims, initial, where)

    def max(self, axis=None, out=None, keepdims=False, initial=None, where=True):
        """Maximum over axes (numpy.ndarray.max)."""
        return _reductions.max(self, axis, out, keepdims, initial, where)

    def min(self, axis=None, out=None, keepdims=False, initial=None, where=True):
        """Minimum over axes (numpy.ndarray.min)."""
        return _reductions.min(self, axis, out, keepdims, initial, where)

    def argmax(self, axis=None, out=None, *, keepdims=False):
        """Index of the maximum (numpy.ndarray.argmax)."""
        return _reductions.argmax(self, axis, out, keepdims=keepdims)

    def argmin(self, axis=None, out=None, *, keepdims=False):
        """Index of the minimum (numpy.ndarray.argmin)."""
        return _reductions.argmin(self, axis, out, keepdims=keepdims)

    def all(self, axis=None, out=None, keepdims=False, *, where=True):
        """True where all elements are non-zero (numpy.ndarray.all)."""
        return _reductions.all(self, axis, out, keepdims, where=where)

    def any(self, axis=None, out=None, keepdims=False, *, where=True):
        """True where some element is non-zero (numpy.ndarray.any)."""
        return _reductions.any(self, axis, out, keepdims, where=where)

    def cumsum(self, axis=None, dtype=None, out=None):
        """Cumulative sum (numpy.ndarray.cumsum)."""
        return _reductions.cumsum(self, axis, dtype, out)

    def cumprod(self, axis=None, dtype=None, out=None):
        """Cumulative product (numpy.ndarray.cumprod)."""
        return _reductions.cumprod(self, axis, dtype, out)

    def ptp(self, axis=None, out=None, keepdims=False):
        """Peak to peak, max - min (cupy.ndarray.ptp; NumPy 2 has only the function)."""
        return _reductions.ptp(self, axis, out, keepdims)

    def mean(self, axis=None, dtype=None, out=None, keepdims=False, *, where=True):
        """Arithmetic mean (numpy.ndarray.mean)."""
        return _statistics.mean(self, axis, dtype, out, keepdims, where=where)

    def var(self, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=True, mean=None,
            correction=None):
        """Variance (numpy.ndarray.var)."""
        if where is True and mean is None and correction is None:   # (NumPy's own var refuses correction=None)
            return _statistics.var(self, axis, dtype, out, ddof, keepdims)
        return _statistics.var(self, axis, dtype, out, ddof, keepdims, where=where, mean=mean,
                                 correction=correction)

    def std(self, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=True, mean=None,
            correction=None):
        """Standard deviation (numpy.ndarray.std)."""
        if where is True and mean is None and correction is None:   # (NumPy's own std refuses correction=None)
            return _statistics.std(self, axis, dtype, out, ddof, keepdims)
        return _statistics.std(self, axis, dtype, out, ddof, keepdims, where=where, mean=mean,
                                 correction=correction)

    def clip(self, min=None, max=None, out=None, **kwargs):
        """Values limited to [min, max] (numpy.ndarray.clip)."""
        return _manipulation.clip(self, min, max, out=out, **kwargs)

    def round(self, decimals=0, out=None):
        """Rounded to decimals, halves to even (numpy.ndarray.round)."""
        return _math.round(self, decimals, out)

    def conj(self):
        """Complex conjugate (numpy.ndarray.conj): a new array for complex dtypes; the array
        itself for the others, bool included (NumPy's method, unlike the ufunc xp.conjugate)."""
        return _OPS["conjugate"](self) if self._t.is_complex() else self

    def conjugate(self):
        """Complex conjugate (numpy.ndarray.conjugate); the array itself for non-complex dtypes."""
        return _OPS["conjugate"](self) if self._t.is_complex() else self

    def reshape(self, *shape, order="C", copy=None):
        """Array of a new shape with the same data (numpy.ndarray.reshape; a.reshape(2, 3) too)."""
        if len(shape) == 1 and not isinstance(shape[0], (int, np.integer)):
            shape = shape[0]
        return _manipulation.reshape(self, shape, order=order, copy=copy)

    def transpose(self, *axes):
        """Axes permuted, reversed by default (numpy.ndarray.transpose; a.transpose(1, 0) too)."""
        if len(axes) == 1 and (axes[0] is None or isinstance(axes[0], (tuple, list))):
            axes = axes[0]
        return _manipulation.transpose(self, axes or None)

    def swapaxes(self, axis1, axis2):
        """View with two axes exchanged (numpy.ndarray.swapaxes)."""
        return _manipulation.swapaxes(self, axis1, axis2)

    def squeeze(self, axis=None):
        """Length-1 axes removed (numpy.ndarray.squeeze)."""
        return _manipulation.squeeze(self, axis)

    def ravel(self, order="C"):
        """Flattened array, a view when possible (numpy.ndarray.ravel)."""
        return _manipulation.ravel(self, order)

    def flatten(self, order="C"):
        """Flattened copy (numpy.ndarray.flatten)."""
        r = _manipulation.ravel(self, order)
        return r.copy() if r._t.data_ptr() == self._t.data_ptr() and self._t.numel() else r

    def repeat(self, repeats, axis=None):
        """Elements repeated (numpy.ndarray.repeat)."""
        return _manipulation.repeat(self, repeats, axis)

    def diagonal(self, offset=0, axis1=0, axis2=1):
        """Diagonal view (numpy.ndarray.diagonal)."""
        return _manipulation.diagonal(self, offset, axis1, axis2)

    def trace(self, offset=0, axis1=0, axis2=1, dtype=None, out=None):
        """Sum along a diagonal (numpy.ndarray.trace)."""
        return _manipulation.trace(self, offset, axis1, axis2, dtype, out)

    def nonzero(self):
        """Indices of the non-zero elements, one array per axis (numpy.ndarray.nonzero)."""
        return _indexing_routines.nonzero(self)

    def take(self, indices, axis=None, out=None, mode="raise"):
        """Elements at indices (numpy.ndarray.take)."""
        return _indexing_routines.take(self, indices, axis, out, mode)

    def put(self, indices, values, mode="raise"):
        """In place self.flat[indices] = values (numpy.ndarray.put)."""
        return _indexing_routines.put(self, indices, values, mode)

    def compress(self, condition, axis=None, out=None):
        """Slices where condition is true (numpy.ndarray.compress)."""
        return _indexing_routines.compress(condition, self, axis, out)

    def choose(self, choices, out=None, mode="raise"):
        """Elements picked from choices by this index array (numpy.ndarray.choose)."""
        return _indexing_routines.choose(self, choices, out, mode)

    def sort(self, axis=-1, kind=None, order=None, *, stable=None):
        """Sorts in place (numpy.ndarray.sort)."""
        self[...] = _sorting.sort(self, axis=axis, kind=kind, stable=stable)

    def argsort(self, axis=-1, kind=None, order=None, *, stable=None):
        """Indices that sort the array (numpy.ndarray.argsort)."""
        return _sorting.argsort(self, axis=axis, kind=kind, stable=stable)

    def partition(self, kth, axis=-1, kind="introselect", order=None):
        """Partitions in place (numpy.ndarray.partition; sorts the whole axis)."""
        self[...] = _sorting.partition(self, kth, axis=axis)

    def argpartition(self, kth, axis=-1, kind="introselect", order=None):
        """Indices that partition the array (numpy.ndarray.argpartition)."""
        return _sorting.argpartition(self, kth, axis=axis)

    def searchsorted(self, v, side="left", sorter=None):
        """Insertion points of v in this sorted array (numpy.ndarray.searchsorted)."""
        return _sorting.searchsorted(self, v, side, sorter)

    def dot(self, b, out=None):
        """Dot product (numpy.ndarray.dot)."""
        return _linalg.dot(self, b, out=out)

    # ---- operators: all go through the ufuncs (NumPy 2 promotion, weak Python scalars); the ones
    # backed by one ufunc are npudist._C._XpUfuncOp objects over it (_operators.ufunc_operator) ----
    __add__ = _operators.ufunc_operator("__add__")
    __radd__ = _operators.ufunc_operator("__radd__")
    def __iadd__(self, o): return _OPS["add"](self, o, out=self)
    __sub__ = _operators.ufunc_operator("__sub__")
    __rsub__ = _operators.ufunc_operator("__rsub__")
    def __isub__(self, o): return _OPS["subtract"](self, o, out=self)
    __mul__ = _operators.ufunc_operator("__mul__")
    __rmul__ = _operators.ufunc_operator("__rmul__")
    def __imul__(self, o): return _OPS["multiply"](self, o, out=self)
    __truediv__ = _operators.ufunc_operator("__truediv__")
    __rtruediv__ = _operators.ufunc_operator("__rtruediv__")
    def __itruediv__(self, o): return _OPS["true_divide"](self, o, out=self)
    __floordiv__ = _operators.ufunc_operator("__floordiv__")
    __rfloordiv__ = _operators.ufunc_operator("__rfloordiv__")
    def __ifloordiv__(self, o): return _OPS["floor_divide"](self, o, out=self)
    __mod__ = _operators.ufunc_operator("__mod__")
    __rmod__ = _operators.ufunc_operator("__rmod__")
    def __imod__(self, o): return _OPS["remainder"](self, o, out=self)
    __divmod__ = _operators.ufunc_operator("__divmod__")
    __rdivmod__ = _operators.ufunc_operator("__rdivmod__")
    __pow__ = _operators.ufunc_operator("__pow__")
    __rpow__ = _operators.ufunc_operator("__rpow__")
    def __ipow__(self, o): return _OPS["power"](self, o, out=self)
    # a @ b: NumPy's matmul on views first, as xp.matmul's (no Python frame before the C call)
    @_host.numpy_first(np.matmul, lambda: ndarray, big=True)
    def __matmul__(self, o):
        r = _protocols.nep13_override(o, np.matmul, (self, o))
        return _linalg.matmul(self, o) if r is _protocols.NO_OVERRIDE else r

    def __rmatmul__(self, o):
        r = _protocols.nep13_override(o, np.matmul, (o, self))
        return _linalg.matmul(o, self) if r is _protocols.NO_OVERRIDE else r

    def __imatmul__(self, o): return _linalg.matmul(self, o, out=self)
    __and__ = _operators.ufunc_operator("__and__")
    __rand__ = _operators.ufunc_operator("__rand__")
    def __iand__(self, o): return _OPS["bitwise_and"](self, o, out=self)
    __or__ = _operators.ufunc_operator("__or__")
    __ror__ = _operators.ufunc_operator("__ror__")
    def __ior__(self, o): return _OPS["bitwise_or"](self, o, out=self)
    __xor__ = _operators.ufunc_operator("__xor__")
    __rxor__ = _operators.ufunc_operator("__rxor__")
    def __ixor__(self, o): return _OPS["bitwise_xor"](self, o, out=self)
    __lshift__ = _operators.ufunc_operator("__lshift__")
    __rlshift__ = _operators.ufunc_operator("__rlshift__")
    def __ilshift__(self, o): return _OPS["left_shift"](self, o, out=self)
    __rshift__ = _operators.ufunc_operator("__rshift__")
    __rrshift__ = _operators.ufunc_operator("__rrshift__")
    def __irshift__(self, o): return _OPS["right_shift"](self, o, out=self)
    __neg__ = _operators.ufunc_operator("__neg__")
    __pos__ = _operators.ufunc_operator("__pos__")
    __abs__ = _operators.ufunc_operator("__abs__")
    __invert__ = _operators.ufunc_operator("__invert__")
    __lt__ = _operators.ufunc_operator("__lt__")
    __le__ = _operators.ufunc_operator("__le__")
    __gt__ = _operators.ufunc_operator("__gt__")
    __ge__ = _operators.ufunc_operator("__ge__")

    def __eq__(self, o):
        if o is None or isinstance(o, str) or _object_compare.plain_object(o):
            return self._no_element_equals(False)
        if _object_compare.foreign_object(o):
            return self._object_compare(operator.eq, o)
        return _OPS["equal"](self, o)

    __eq__ = _operators.ufunc_operator("__eq__", __eq__)

    def __ne__(self, o):
        if o is None or isinstance(o, str) or _object_compare.plain_object(o):
            return self._no_element_equals(True)
        if _object_compare.foreign_object(o):
            return self._object_compare(operator.ne, o)
        return _OPS["not_equal"](self, o)

    __ne__ = _operators.ufunc_operator("__ne__", __ne__)

    def _object_compare(self, op, o):
        """``a == o`` for an object with its own ``__eq__``/``__ne__`` (_object_compare.compare)."""
        r = _object_compare.compare(self._t, op, o)
        return wrap(r) if isinstance(r, torch.Tensor) else r

    def _no_element_equals(self, fill):
        """``a == None`` / ``a == 'text'``: NumPy 2 compares elementwise, no element equals: a bool
        array of a's shape filled with ``fill`` (False for ==, True for !=)."""
        t = self._t
        return wrap(torch.full(t.shape, fill, dtype=torch.bool, device=t.device))

@_host.numpy_first(operator.getitem, ndarray, big=True, fp=_host.FP_NEVER)   # (indexing: no FP state to set)
def _mask_getitem(a, mask):
    """``a[mask]`` for an xp boolean array ``mask``, run as NumPy's boolean indexing on zero-copy views
    (its result allocated in npu memory), or None where that path declines (ndarray.__getitem__'s
    own indexing then runs; shape mismatches raise there)."""
    return None


def _owner(a):
    """The xp array owning the memory a views (NumPy's collapsed base), or a itself."""
    if type(a._t) is not _NEG and owns_memory(a._t):
        return a
    return getattr(a, "_b", None)


def _neg_getitem(a, t, items):
    """a[key] where a is a negative-stride view or key has a negative step (_indexing.neg_getitem)."""
    v, is_view = _indexing.neg_getitem(t, items)
    res = wrap(v)
    if is_view:
        res._b = _owner(a)
    return res


def _neg_permute(a, t, perm):
    """Axes of negative-stride view a (tensor t) permuted, a view of the same memory."""
    v, is_view = _negview.permute(t, perm)
    res = wrap(v)
    if is_view:
        res._b = _owner(a)
    return res


def _shape_arg(shape, numel=None):
    if isinstance(shape, (int, np.integer)) or hasattr(shape, "__index__") and not isinstance(shape, (tuple, list)):
        return (int(shape),)
    return tuple(int(s) for s in shape)


# The class is complete: the core's routines may make arrays of it, and the ufuncs (one table: the
# operators', the routines' and the public xp.add etc.) get their C fast path for it.
_array.register(ndarray)
