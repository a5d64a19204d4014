"""xp.ndarray: a NumPy-semantics array whose memory is an npu tensor (``a._t``)."""
import numpy as np
import torch

from . import _indexing
from ._core import as_tensor, check_order, in_order, to_numpy, wrap
from ._dtypes import NP_TO_TORCH, TORCH_TO_NP, to_dtype
from ._unsigned import as_uint, plain

_ops = None  # the ufunc module; set by npudist.xp.__init__ (operators dispatch to ufuncs)
_PY_RANGE_CHECK = {torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8, torch.uint16, torch.uint32,
                   torch.uint64}


class Flags:
    """a.flags: C_CONTIGUOUS, F_CONTIGUOUS, OWNDATA, WRITEABLE (also as attributes, lower case)."""

    def __init__(self, t):
        self.c_contiguous = t.is_contiguous()
        self.f_contiguous = t.ndim <= 1 and self.c_contiguous or t.permute(*range(t.ndim - 1, -1, -1)).is_contiguous()
        self.owndata = t._base is None
        self.writeable = True
        self.aligned = True

    def __getitem__(self, name):
        key = {"C": "c_contiguous", "F": "f_contiguous", "CONTIGUOUS": "c_contiguous",
               "FORTRAN": "f_contiguous"}.get(name, name.lower())
        try:
            return getattr(self, key)
        except AttributeError:
            raise KeyError(f"unknown flag {name!r}") from None

    def __repr__(self):
        return "\n".join(f"  {n.upper()} : {getattr(self, n)}"
                         for n in ("c_contiguous", "f_contiguous", "owndata", "writeable", "aligned"))


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


class ndarray:
    """N-dimensional array on the rank's npu with NumPy semantics (matches numpy.ndarray).

    Construct with xp.asarray / xp.array / creation functions; ``xp.ndarray(shape, dtype)``
    allocates an uninitialised array like numpy.ndarray(shape, dtype). The torch tensor holding
    the memory is ``a._t`` (public view of it: ``torch.from_dlpack(a)`` or ``xp.to_torch(a)``)."""

    __slots__ = ("_t", "__weakref__")
    __array_priority__ = 100
    __array_ufunc__ = None  # NumPy defers binary operators to ours: np_array + xp_array -> xp.ndarray

    def __init__(self, shape, dtype=float, buffer=None, offset=0, strides=None, order="C"):
        if buffer is not None or strides is not None:
            raise NotImplementedError("xp.ndarray(buffer=..., strides=...) is not supported; use xp.asarray")
        dt = to_dtype(dtype)
        from ._config import device
        shape = (shape,) if isinstance(shape, int) else tuple(shape)
        self._t = as_uint(torch.empty(shape, dtype=NP_TO_TORCH[dt], device=device()))

    # ---- attributes -------------------------------------------------------------------------
    @property
    def dtype(self):
        return TORCH_TO_NP[self._t.dtype]

    @property
    def shape(self):
        return tuple(self._t.shape)

    @shape.setter
    def shape(self, value):
        self._t = self._t.view(_shape_arg(value, self._t.numel()))

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
        s = self._t.element_size()
        return tuple(x * s for x in self._t.stride())

    @property
    def flags(self):
        return Flags(self._t)

    @property
    def base(self):
        b = self._t._base
        return None if b is None else wrap(b)

    @property
    def data(self):
        """Where the array's memory is (as cupy.ndarray.data): ``a.data.ptr`` is the address of the
        first element in npu memory, ``a.data.device_id`` the npu index."""
        return MemoryPointer(self._t)

    @property
    def flat(self):
        """Flat iterator over the array in C order (matches numpy.ndarray.flat / cupy's flatiter):
        ``a.flat[i]``, ``a.flat[1:4] = v`` (writes through), ``len``, iteration, ``copy()``."""
        return flatiter(self)

    @property
    def data_ptr(self):
        """Address of the first element in npu memory (the tensor's data_ptr)."""
        return self._t.data_ptr()

    @property
    def T(self):
        t = self._t
        return wrap(t.permute(*range(t.ndim - 1, -1, -1))) if t.ndim > 1 else wrap(t)

    @property
    def mT(self):
        if self._t.ndim < 2:
            raise ValueError("matrix transpose (mT) needs an array with at least 2 dimensions")
        return wrap(self._t.transpose(-1, -2))

    @property
    def real(self):
        t = self._t
        return wrap(torch.real(t)) if t.is_complex() else wrap(t)

    @real.setter
    def real(self, value):
        self.real[...] = value

    @property
    def imag(self):
        t = self._t
        if t.is_complex():
            return wrap(torch.imag(t))
        return wrap(torch.zeros_like(t))

    @imag.setter
    def imag(self, value):
        if not self._t.is_complex():
            raise TypeError("array does not have imaginary part to set")
        self.imag[...] = value

    @property
    def device(self):
        """torch.device of the npu holding the array (Array API: ``x.device``)."""
        return self._t.device

    def to_device(self, device, /, *, stream=None):
        """Array API: a copy on another npu (``'npu:1'``, a torch.device); 'cpu' is not an xp device."""
        device = torch.device(device)
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
        """DLPack export of the npu memory: consumers (torch.from_dlpack) get an npu tensor over the
        same memory. Implemented through the tensor's own exporter, so torch's __dlpack_device__ (which
        rejects the renamed PrivateUse1 device in torch 2.13) is never consulted."""
        t = self._t
        if dl_device is not None and tuple(dl_device) != self.__dlpack_device__():
            if tuple(dl_device)[0] != 1 or copy is False:
                raise BufferError(f"xp arrays export to their own device {self.__dlpack_device__()} or, copying, to "
                                  f"the host (1, 0); not {tuple(dl_device)} with copy={copy}")
            t = t.cpu()  # a host copy, as the standard allows for another device
        elif copy:
            t = t.clone()
        if t.is_conj() or t.is_neg():
            t = t.resolve_conj().resolve_neg()
        t = plain(t)
        if max_version is not None and tuple(max_version) >= (1, 0):
            return t.__dlpack__(max_version=tuple(max_version))
        return torch.utils.dlpack.to_dlpack(t)

    def __dlpack_device__(self):
        # kDLExtDev: how torch itself tags PrivateUse1 tensors in DLPack capsules.
        return (int(torch.utils.dlpack.DLDeviceType.kDLExtDev), self._t.device.index or 0)

    def __array_namespace__(self, *, api_version=None):
        from . import _array_api
        return _array_api.namespace(api_version)

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
        return wrap(self._t.to(tdt))

    def copy(self, order="C"):
        """A copy in memory order 'C' (default), 'F', 'A' or 'K' (matches numpy.ndarray.copy)."""
        return wrap(in_order(self._t, check_order(order), copy=True))

    def __copy__(self):
        return self.copy()

    def __deepcopy__(self, memo):
        return self.copy()

    def __reduce__(self):
        from . import _creation
        return (_creation.asarray, (to_numpy(self._t),))

    def view(self, dtype=None, type=None):
        if dtype is None:
            return wrap(self._t.view(self._t.shape))
        return wrap(self._t.view(NP_TO_TORCH[to_dtype(dtype)]))

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
        if self._t.ndim == 0:
            raise TypeError("iteration over a 0-d array")
        for i in range(self._t.shape[0]):
            yield wrap(self._t[i])

    def __bool__(self):
        if self._t.numel() != 1:
            raise ValueError(f"The truth value of an array with {self._t.numel()} elements is ambiguous. "
                             f"Use a.any() or a.all()")
        return bool(self._t.item())

    def __int__(self):
        if self._t.numel() != 1:
            raise TypeError("only size-1 arrays can be converted to Python scalars")
        if self._t.is_complex():
            raise TypeError("int() of a complex array; use .real")
        return int(self._t.item())

    def __float__(self):
        if self._t.numel() != 1:
            raise TypeError("only size-1 arrays can be converted to Python scalars")
        if self._t.is_complex():
            raise TypeError("float() of a complex array; use .real")
        return float(self._t.item())

    def __complex__(self):
        if self._t.numel() != 1:
            raise TypeError("only size-1 arrays can be converted to Python scalars")
        return complex(self._t.item())

    def __index__(self):
        t = self._t
        if t.ndim != 0 or t.is_floating_point() or t.is_complex() or t.dtype == torch.bool:
            raise TypeError("only integer scalar arrays can be converted to a scalar index")
        return int(t.item())

    __hash__ = None

    def __contains__(self, value):
        return bool(_ops.equal(self, value)._t.any())

    # ---- indexing ------------------------------------------------------------------------------
    def __getitem__(self, key):
        return wrap(_indexing.getitem(self._t, key))

    def __setitem__(self, key, value):
        t = self._t
        if isinstance(value, ndarray):
            v = value._t
        elif type(value) in (int, float, bool, complex):
            v = _scalar_value(value, t)
        else:
            v = as_tensor(value)
        _indexing.setitem(t, key, v)

    # ---- operators: all go through the ufuncs (NumPy 2 promotion, weak Python scalars) ----------
    def __add__(self, o): return _ops.add(self, o)
    def __radd__(self, o): return _ops.add(o, self)
    def __iadd__(self, o): return _ops.add(self, o, out=self)
    def __sub__(self, o): return _ops.subtract(self, o)
    def __rsub__(self, o): return _ops.subtract(o, self)
    def __isub__(self, o): return _ops.subtract(self, o, out=self)
    def __mul__(self, o): return _ops.multiply(self, o)
    def __rmul__(self, o): return _ops.multiply(o, self)
    def __imul__(self, o): return _ops.multiply(self, o, out=self)
    def __truediv__(self, o): return _ops.true_divide(self, o)
    def __rtruediv__(self, o): return _ops.true_divide(o, self)
    def __itruediv__(self, o): return _ops.true_divide(self, o, out=self)
    def __floordiv__(self, o): return _ops.floor_divide(self, o)
    def __rfloordiv__(self, o): return _ops.floor_divide(o, self)
    def __ifloordiv__(self, o): return _ops.floor_divide(self, o, out=self)
    def __mod__(self, o): return _ops.remainder(self, o)
    def __rmod__(self, o): return _ops.remainder(o, self)
    def __imod__(self, o): return _ops.remainder(self, o, out=self)
    def __divmod__(self, o): return _ops.divmod(self, o)
    def __rdivmod__(self, o): return _ops.divmod(o, self)
    def __pow__(self, o, mod=None): return _ops.power(self, o)
    def __rpow__(self, o): return _ops.power(o, self)
    def __ipow__(self, o): return _ops.power(self, o, out=self)
    def __matmul__(self, o): return _ops.matmul(self, o)
    def __rmatmul__(self, o): return _ops.matmul(o, self)
    def __imatmul__(self, o): return _ops.matmul(self, o, out=self)
    def __and__(self, o): return _ops.bitwise_and(self, o)
    def __rand__(self, o): return _ops.bitwise_and(o, self)
    def __iand__(self, o): return _ops.bitwise_and(self, o, out=self)
    def __or__(self, o): return _ops.bitwise_or(self, o)
    def __ror__(self, o): return _ops.bitwise_or(o, self)
    def __ior__(self, o): return _ops.bitwise_or(self, o, out=self)
    def __xor__(self, o): return _ops.bitwise_xor(self, o)
    def __rxor__(self, o): return _ops.bitwise_xor(o, self)
    def __ixor__(self, o): return _ops.bitwise_xor(self, o, out=self)
    def __lshift__(self, o): return _ops.left_shift(self, o)
    def __rlshift__(self, o): return _ops.left_shift(o, self)
    def __ilshift__(self, o): return _ops.left_shift(self, o, out=self)
    def __rshift__(self, o): return _ops.right_shift(self, o)
    def __rrshift__(self, o): return _ops.right_shift(o, self)
    def __irshift__(self, o): return _ops.right_shift(self, o, out=self)
    def __neg__(self): return _ops.negative(self)
    def __pos__(self): return _ops.positive(self)
    def __abs__(self): return _ops.absolute(self)
    def __invert__(self): return _ops.invert(self)
    def __lt__(self, o): return _ops.less(self, o)
    def __le__(self, o): return _ops.less_equal(self, o)
    def __gt__(self, o): return _ops.greater(self, o)
    def __ge__(self, o): return _ops.greater_equal(self, o)

    def __eq__(self, o):
        if o is None or isinstance(o, str):
            return False
        return _ops.equal(self, o)

    def __ne__(self, o):
        if o is None or isinstance(o, str):
            return True
        return _ops.not_equal(self, o)


from . import _core  # noqa: E402
_core.ndarray = ndarray


class MemoryPointer:
    """``a.data``: the npu address of an array's first element (``ptr``, as CuPy's MemoryPointer)
    and the npu index (``device_id``). Keeps the tensor alive while held."""
    __slots__ = ("ptr", "device_id", "_owner")

    def __init__(self, t):
        self.ptr = t.data_ptr()
        self.device_id = t.device.index or 0
        self._owner = t

    def __int__(self):
        return self.ptr

    def __repr__(self):
        return f"<xp.MemoryPointer ptr=0x{self.ptr:x} device_id={self.device_id}>"


class flatiter:
    """``a.flat``: 1-d view of an array in C order (matches numpy.flatiter). Reads return arrays
    (0-d for an integer index); writes go to the array; a value shorter than the selection repeats
    as NumPy's does."""

    def __init__(self, a):
        self._a = a
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
        return wrap(t.reshape(-1)[i])

    @staticmethod
    def _key(key):
        if key is None or key is Ellipsis and False:
            raise IndexError("only integers, slices (`:`), ellipsis (`...`) and integer or boolean arrays are "
                             "valid indices")
        if type(key) is tuple:
            if len(key) != 1:
                raise IndexError("too many indices for a flat iterator")
            key = key[0]
        return key

    def __getitem__(self, key):
        from . import _indexing
        return wrap(_indexing.getitem(self._a._t.reshape(-1), self._key(key)))

    def __setitem__(self, key, value):
        from . import _indexing
        key = self._key(key)
        t = self._a._t
        idx = _indexing.getitem(torch.arange(t.numel(), device=t.device), key)
        v = value._t if isinstance(value, ndarray) else as_tensor(value)
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
        return wrap(self._a._t.reshape(-1).clone())

    def __array__(self, dtype=None, copy=None):
        return np.asarray(self.copy(), dtype=dtype)


def _shape_arg(shape, numel=None):
    if isinstance(shape, (int, np.integer)) or hasattr(shape, "__index__") and not isinstance(shape, (tuple, list)):
        return (int(shape),)
    return tuple(int(s) for s in shape)


def install_methods(namespace):
    """Adds the NumPy array methods that are module functions (a.sum(), a.reshape(), ...)."""
    def method(fn):
        def m(self, *args, **kwargs):
            return fn(self, *args, **kwargs)
        m.__name__ = fn.__name__
        m.__doc__ = fn.__doc__
        return m

    for name in ("sum", "prod", "mean", "std", "var", "min", "max", "argmin", "argmax", "all", "any",
                 "cumsum", "cumprod", "clip", "round", "nonzero", "argsort", "diagonal", "trace", "repeat",
                 "take", "conj", "conjugate", "searchsorted", "squeeze", "swapaxes", "ravel", "ptp",
                 "dot", "compress", "argpartition", "put", "choose"):
        if name in namespace:
            setattr(ndarray, name, method(namespace[name]))

    def reshape(self, *shape, order="C"):
        if len(shape) == 1 and not isinstance(shape[0], (int, np.integer)):
            shape = shape[0]
        return namespace["reshape"](self, shape, order=order)

    def transpose(self, *axes):
        if len(axes) == 1 and (axes[0] is None or isinstance(axes[0], (tuple, list))):
            axes = axes[0]
        return namespace["transpose"](self, axes or None)

    def flatten(self, order="C"):
        return namespace["ravel"](self, order=order).copy() if order in "CA" else namespace["ravel"](self, order)

    def sort(self, axis=-1, kind=None, order=None, stable=None):
        """In-place sort (matches numpy.ndarray.sort)."""
        self[...] = namespace["sort"](self, axis=axis, kind=kind, stable=stable)

    def partition(self, kth, axis=-1, kind="introselect", order=None):
        self[...] = namespace["partition"](self, kth, axis=axis)

    ndarray.reshape = reshape
    ndarray.transpose = transpose
    ndarray.flatten = flatten
    ndarray.sort = sort
    ndarray.partition = partition
