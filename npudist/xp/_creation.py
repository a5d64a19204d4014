"""Array creation (matches numpy's creation routines), NumPy/torch/DLPack interop."""
import math
import operator

import numpy as np
import torch

from . import _config, _host
from ._core import (
    OPS,
    as_tensor,
    check_order,
    f_layout,
    in_order,
    is_f_contiguous,
    ndarray,
    normalize_axis,
    to_numpy,
    wrap,
)
from ._core._creation import asarray, npu_device
from ._core._manipulation import copyto
from ._device import current_device_id
from ._dtypes import NP_TO_TORCH, TORCH_TO_NP, to_dtype
from ._unsigned import as_uint, owns_memory, plain

_DEFAULT_FLOAT = np.dtype(np.float64)


def _dt(dtype, default=_DEFAULT_FLOAT):
    return default if dtype is None else to_dtype(dtype)


def _shape(shape):
    if shape is None:
        raise TypeError("Use () not None as shape arguments")
    if isinstance(shape, (tuple, list)):
        return tuple(operator.index(s) for s in shape)
    return (operator.index(shape),)


def _check_shape(shape):
    for s in shape:
        if s < 0:
            raise ValueError(f"negative dimensions are not allowed (shape {shape})")
    return shape


def array(obj, dtype=None, copy=True, order="K", subok=False, ndmin=0, *, like=None):
    """Array from array-like data, copying by default (matches numpy.array).

    copy=True: always a new array, laid out as ``order`` asks ('K' keeps the input's axis order,
    'F' gives NumPy's canonical Fortran strides); copy=None: a copy only when dtype/order need one;
    copy=False: never a copy (ValueError as NumPy when one is needed). ``ndmin`` prepends axes
    (a view whose ``base`` is the input when no copy was made)."""
    order = check_order(order)
    dt = None if dtype is None else to_dtype(dtype)
    src = obj._t if isinstance(obj, ndarray) else obj if isinstance(obj, torch.Tensor) else None
    dev = None
    if isinstance(obj, ndarray) and (obj._t.device.index or 0) != current_device_id():
        dev = npu_device(current_device_id())          # another npu's array is copied onto the current one (CuPy)
    if copy is False or copy is None:
        t = as_tensor(obj, dtype=dt, copy=copy, device=dev)
        t2 = in_order(t, order)
        if t2 is not t and copy is False:
            raise ValueError("Unable to avoid copy while creating an array as requested.")
        t = t2
    else:
        t = as_tensor(obj, dtype=dt, device=dev)
        shared = src is not None and t.data_ptr() == src.data_ptr()
        if order == "F" and not shared:
            t = f_layout(t)                       # NumPy's canonical F strides (size-1 axes too)
        else:
            t = in_order(t, order, like=src, copy=shared)
    a = obj if isinstance(obj, ndarray) and t is obj._t else wrap(t)
    if ndmin and a.ndim < ndmin:
        v = wrap(a._t.reshape((1,) * (ndmin - a.ndim) + tuple(a._t.shape)))
        v._b = a                                  # a view of a: NumPy's base
        a = v
    return a


@_host.numpy_first(np.ascontiguousarray, ndarray, big=True)   # NumPy's copy on npu memory first (docs/xp.md)
def ascontiguousarray(a, dtype=None, *, like=None):
    """C-contiguous array, at least 1-d (matches numpy.ascontiguousarray)."""
    t = as_tensor(a, dtype=None if dtype is None else to_dtype(dtype))
    if isinstance(a, ndarray) and t is a._t and t.ndim and t.is_contiguous():
        return a                                  # NumPy returns the input itself then
    return wrap(t.contiguous() if t.ndim else t.reshape(1))


def asfortranarray(a, dtype=None, *, like=None):
    """Fortran-ordered (column-major) array, at least 1-d (matches numpy.asfortranarray); copies
    only when the input is not F-contiguous already."""
    t = as_tensor(a, dtype=None if dtype is None else to_dtype(dtype))
    if t.ndim == 0:
        t = t.reshape(1)
    return wrap(t if is_f_contiguous(t) else f_layout(t))


_REQUIREMENTS = {"C": "C", "C_CONTIGUOUS": "C", "CONTIGUOUS": "C", "F": "F", "F_CONTIGUOUS": "F",
                 "FORTRAN": "F", "A": "A", "ALIGNED": "A", "W": "W", "WRITEABLE": "W", "O": "O", "OWNDATA": "O",
                 "E": "E", "ENSUREARRAY": "E"}


def require(a, dtype=None, requirements=None, *, like=None):
    """Array that meets requirements (matches numpy.require): 'C'/'F' contiguity, 'O' own data
    (a copy when the array is a view), 'A'/'W'/'E' (always true for xp arrays). Both 'C' and 'F' raise ValueError."""
    if requirements is None:
        reqs = set()
    else:
        if isinstance(requirements, str):
            requirements = [requirements]
        try:
            reqs = {_REQUIREMENTS[r.upper()] for r in requirements}
        except KeyError as e:
            raise KeyError(f"unknown requirement {e.args[0]!r}; use C, F, A, W, O or E") from None
    if "C" in reqs and "F" in reqs:
        raise ValueError("Cannot specify both \"C\" and \"F\" order")
    arr = asarray(a, dtype=dtype)
    t = arr._t
    if "C" in reqs and not t.is_contiguous():
        t = t.contiguous()
    elif "F" in reqs and not is_f_contiguous(t):
        t = f_layout(t)
    if "O" in reqs and t is arr._t and not owns_memory(t):
        t = t.clone(memory_format=torch.preserve_format)
    return arr if t is arr._t else wrap(t)


asanyarray = asarray


def asarray_chkfinite(a, dtype=None, order=None):
    """asarray that refuses infinities and NaNs (matches numpy.asarray_chkfinite: ValueError; an
    inf/nan converted to an integer dtype raises NumPy's OverflowError/ValueError first)."""
    arr = asarray(a, dtype=dtype, order=order)
    if arr.dtype.kind in "fc" and not bool(torch.isfinite(arr._t).all()):
        raise ValueError("array must not contain infs or NaNs")
    return arr


def asnumpy(a, stream=None, order="C", out=None):
    """NumPy copy of an xp array (or of anything array-like; matches cupy.asnumpy)."""
    if isinstance(a, ndarray):
        res = to_numpy(a._t)
    elif isinstance(a, torch.Tensor):
        res = to_numpy(a)
    else:
        res = np.asarray(a)
    if out is not None:
        out[...] = res
        return out
    return res


def to_torch(a):
    """The npu tensor holding an xp array's memory (no copy) - for handing batches to training.
    A plain torch.Tensor, also for uint16/32/64 (whose xp-internal tensors emulate missing kernels)."""
    return plain(asarray(a)._t)


def from_dlpack(x, /, *, device=None, copy=None):
    """Array from a DLPack producer (matches numpy.from_dlpack / Array API from_dlpack).

    Producers on the npu (xp arrays, npu tensors) share memory; host producers (NumPy, cpu tensors)
    are copied onto the npu, since npu memory comes from the npu allocator. copy=False then raises
    ValueError (BufferError for a foreign device)."""
    if isinstance(x, ndarray):
        t = x._t
    elif isinstance(x, torch.Tensor):
        t = x  # torch's own __dlpack_device__ rejects the renamed PrivateUse1 device (torch 2.13)
    else:
        t = torch.from_dlpack(x)
    np_t = TORCH_TO_NP.get(t.dtype)
    if np_t is None:
        to_dtype(t.dtype)
    target = npu_device(device)
    if t.device != target:
        if copy is False:
            raise BufferError(f"from_dlpack(copy=False): the producer is on {t.device}, xp needs {target}")
        return wrap(t.to(target))
    return wrap(t.clone() if copy else t)


def _fill(shape, value, dtype, device, order="C"):
    shape = _check_shape(_shape(shape))
    return wrap(_new_order(torch.full(shape, value, dtype=NP_TO_TORCH[dtype], device=npu_device(device)), order))


def _new_order(t, order):
    """A new array in order 'C' or 'F' (NumPy's creation functions take only those two)."""
    o = check_order(order, ("C", "F"))
    return _zero_strides(f_layout(t) if o == "F" and t.ndim > 1 else t)


def _zero_strides(t):
    """NumPy 2 allocates zero-size arrays with all strides 0 (views of them keep theirs)."""
    if t.numel() == 0 and t.ndim:
        # a fresh tensor (not an as_strided view), so the array owns its memory as NumPy's does
        return as_uint(torch.empty_strided(t.shape, (0,) * t.ndim, dtype=t.dtype, device=t.device))
    return t


def empty(shape, dtype=float, order="C", *, device=None, like=None):
    """Uninitialised array (matches numpy.empty)."""
    shape = _check_shape(_shape(shape))
    return wrap(_new_order(torch.empty(shape, dtype=NP_TO_TORCH[_dt(dtype)], device=npu_device(device)), order))


def zeros(shape, dtype=float, order="C", *, device=None, like=None):
    """Array of zeros (matches numpy.zeros)."""
    shape = _check_shape(_shape(shape))
    return wrap(_new_order(torch.zeros(shape, dtype=NP_TO_TORCH[_dt(dtype)], device=npu_device(device)), order))


def ones(shape, dtype=float, order="C", *, device=None, like=None):
    """Array of ones (matches numpy.ones)."""
    shape = _check_shape(_shape(shape))
    return wrap(_new_order(torch.ones(shape, dtype=NP_TO_TORCH[_dt(dtype)], device=npu_device(device)), order))


def _fill_value(value, dtype):
    """A scalar fill value as a Python number of ``dtype``: arrays, NumPy scalars and complex numbers
    for real dtypes are cast as NumPy's copyto(casting='unsafe') casts them (ComplexWarning when an
    imaginary part is dropped); Python ints out of an integer dtype's range raise OverflowError."""
    if isinstance(value, ndarray):
        value = value.get()
    if isinstance(value, (np.ndarray, np.generic)) or (dtype.kind not in "c" and type(value) is complex):
        return np.asarray(value).astype(dtype).item()
    if dtype.kind in "iub" and type(value) is int:
        info = np.iinfo(dtype) if dtype.kind != "b" else None
        if info is not None and not info.min <= value <= info.max:
            raise OverflowError(f"Python integer {value} out of bounds for {dtype}")
    return value


def _fill_array(shape, fill_value, dt, device, order):
    """NumPy's full for a fill value with dimensions: broadcast into a new array (unsafe casting)."""
    a = empty(shape, dt, order=order, device=device)
    copyto(a, fill_value, casting="unsafe")
    return a


def full(shape, fill_value, dtype=None, order="C", *, device=None, like=None):
    """Array filled with fill_value (matches numpy.full: dtype defaults to fill_value's)."""
    if dtype is None:
        if isinstance(fill_value, ndarray):
            dt = fill_value.dtype
        else:
            dt = to_dtype(np.asarray(fill_value).dtype)
    else:
        dt = to_dtype(dtype)
    if np.ndim(fill_value) > 0:
        return _fill_array(shape, fill_value, dt, device, order)
    return _fill(shape, _fill_value(fill_value, dt), dt, device, order)


def _like(a, dtype, shape):
    a = asarray(a)
    dt = a.dtype if dtype is None else to_dtype(dtype)
    return dt, (a.shape if shape is None else _shape(shape)), a._t.device, a._t


def _like_order(t, proto, order, shape_given):
    """The memory order of a *_like result (NumPy: 'K' and 'A' follow the prototype's layout)."""
    o = check_order(order)
    if o == "K" and shape_given and t.ndim != proto.ndim:
        o = "C"                                   # NumPy: 'K' keeps the axis order only at equal ndim
    return _zero_strides(in_order(t, o, like=proto) if o != "C" else t)


def empty_like(prototype, dtype=None, order="K", subok=True, shape=None, *, device=None):
    """Uninitialised array like prototype (matches numpy.empty_like, memory order included)."""
    dt, shp, dev, p = _like(prototype, dtype, shape)
    t = torch.empty(shp, dtype=NP_TO_TORCH[dt], device=dev if device is None else npu_device(device))
    return wrap(_like_order(t, p, order, shape is not None))


def zeros_like(a, dtype=None, order="K", subok=True, shape=None, *, device=None):
    """Zeros like a (matches numpy.zeros_like, memory order included)."""
    dt, shp, dev, p = _like(a, dtype, shape)
    t = torch.zeros(shp, dtype=NP_TO_TORCH[dt], device=dev if device is None else npu_device(device))
    return wrap(_like_order(t, p, order, shape is not None))


def ones_like(a, dtype=None, order="K", subok=True, shape=None, *, device=None):
    """Ones like a (matches numpy.ones_like, memory order included)."""
    dt, shp, dev, p = _like(a, dtype, shape)
    t = torch.ones(shp, dtype=NP_TO_TORCH[dt], device=dev if device is None else npu_device(device))
    return wrap(_like_order(t, p, order, shape is not None))


def full_like(a, fill_value, dtype=None, order="K", subok=True, shape=None, *, device=None):
    """fill_value like a (matches numpy.full_like, memory order included)."""
    dt, shp, dev, p = _like(a, dtype, shape)
    if np.ndim(fill_value) > 0:     # broadcast into the new array, as NumPy's copyto
        r = empty_like(a, dtype, order, subok, shape, device=device)
        copyto(r, fill_value, casting="unsafe")
        return r
    t = torch.full(shp, _fill_value(fill_value, dt), dtype=NP_TO_TORCH[dt],
                   device=dev if device is None else npu_device(device))
    return wrap(_like_order(t, p, order, shape is not None))


def arange(start, stop=None, step=None, dtype=None, *, device=None, like=None):
    """Evenly spaced values in [start, stop) (matches numpy.arange, including its dtype choice)."""
    if stop is None:
        start, stop = 0, start
    if step is None:
        step = 1
    if step == 0:
        raise ZeroDivisionError("arange: step must not be zero")
    for v in (start, stop, step):
        if isinstance(v, ndarray):
            raise TypeError("arange takes Python scalars, not arrays (use int(a) / float(a))")
    dt = to_dtype(np.result_type(start, stop, step) if dtype is None else dtype)
    if dtype is None and all(type(v) is int or isinstance(v, np.integer) for v in (start, stop, step)):
        dt = np.dtype(np.int64)
    n = max(0, math.ceil((stop - start) / step)) if not isinstance(start, complex) else None
    if n is None:
        raise TypeError("arange with complex arguments is not supported")
    if dt.kind == "b" and n > 2:
        raise TypeError("arange() is only supported for booleans when the result has at most length 2.")
    if dt.kind in "iu":
        first = int(start.real if isinstance(start, complex) else start)
        info = np.iinfo(dt)
        if not info.min <= first <= info.max:   # NumPy 2: the first value must fit (later ones wrap)
            raise OverflowError(f"Python integer {first} out of bounds for {dt}")
    dev = npu_device(device)
    if dt.kind in "iub":
        t = torch.arange(start, start + n * step, step, dtype=torch.int64, device=dev)[:n]
        if t.numel() < n:
            t = torch.arange(n, dtype=torch.int64, device=dev) * step + start
        return wrap(t.to(NP_TO_TORCH[dt]))
    # NumPy computes start + i*step (not an accumulated sum) in the result dtype
    work = torch.float64 if dt.kind == "f" else torch.complex128
    t = torch.arange(n, dtype=torch.float64, device=dev).to(work) * step + start
    return wrap(t.to(NP_TO_TORCH[dt]))


def linspace(start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0, *, device=None):
    """num evenly spaced samples over [start, stop] (matches numpy.linspace; array start/stop too)."""
    num = operator.index(num)
    if num < 0:
        raise ValueError(f"Number of samples, {num}, must be non-negative.")
    s = asarray(start)
    e = asarray(stop)
    add = OPS["add"]
    multiply = OPS["multiply"]
    subtract = OPS["subtract"]
    true_divide = OPS["true_divide"]
    dt_calc = np.result_type(s.dtype, e.dtype, float(num))   # NumPy: float(num) is weak
    s = s.astype(dt_calc, copy=False)
    e = e.astype(dt_calc, copy=False)
    div = (num - 1) if endpoint else num
    delta = subtract(e, s)
    steps = wrap(torch.arange(num, dtype=torch.float64, device=s._t.device).to(NP_TO_TORCH[dt_calc]))
    steps = steps.reshape((-1,) + (1,) * delta.ndim)
    if div > 0:
        step = true_divide(delta, div)
        if bool(torch.any(step._t == 0)):
            # a step that underflows to 0: NumPy scales i / div by delta instead of i * step
            y = add(multiply(true_divide(steps, div), delta), s)
        else:
            y = add(multiply(steps, step), s)
    else:
        step = wrap(torch.full(delta._t.shape, float("nan"), dtype=NP_TO_TORCH[dt_calc], device=s._t.device))
        y = add(multiply(steps, delta), s)
    if endpoint and num > 1:
        y._t[-1] = e._t
    if axis != 0:
        y = wrap(torch.movedim(y._t, 0, normalize_axis(axis, y.ndim)))   # numpy.moveaxis(y, 0, axis)
    if dtype is not None:
        dt = to_dtype(dtype)
        y = wrap(torch.floor(y._t).to(NP_TO_TORCH[dt])) if dt.kind in "iu" else y.astype(dt, copy=False)
    return (y, step) if retstep else y


def logspace(start, stop, num=50, endpoint=True, base=10.0, dtype=None, axis=0):
    """base ** linspace(start, stop) (matches numpy.logspace)."""
    power = OPS["power"]
    y = power(base, linspace(start, stop, num, endpoint=endpoint, axis=axis))
    return y if dtype is None else y.astype(dtype, copy=False)


def geomspace(start, stop, num=50, endpoint=True, dtype=None, axis=0):
    """Geometric progression (matches numpy.geomspace for real positive or negative endpoints)."""
    log10 = OPS["log10"]
    power = OPS["power"]
    if start == 0 or stop == 0:
        raise ValueError("Geometric sequence cannot include zero")
    s, e = asarray(float(start)), asarray(float(stop))
    if (start < 0) != (stop < 0):
        raise ValueError("geomspace: start and stop must have the same sign (complex is not supported)")
    sg = -1.0 if start < 0 else 1.0
    y = power(10.0, linspace(log10(abs(s)), log10(abs(e)), num, endpoint=endpoint, axis=axis)) * sg
    if num > 0:
        y._t[0] = start
        if endpoint and num > 1:
            y._t[-1] = stop
    return y if dtype is None else y.astype(dtype, copy=False)


def eye(N, M=None, k=0, dtype=float, order="C", *, device=None, like=None):
    """2-D array with ones on diagonal k (matches numpy.eye)."""
    M = N if M is None else M
    t = torch.zeros((N, M), dtype=NP_TO_TORCH[_dt(dtype)], device=npu_device(device))
    if N and M and -N < k < M:
        t.diagonal(k).fill_(1)
    return wrap(_new_order(t, order))


def identity(n, dtype=float, *, like=None):
    return eye(n, dtype=dtype)


def tri(N, M=None, k=0, dtype=float, *, like=None):
    """Lower-triangular ones (matches numpy.tri)."""
    M = N if M is None else M
    t = torch.ones((N, M), dtype=torch.bool, device=_config.device()).tril(k)
    return wrap(t.to(NP_TO_TORCH[_dt(dtype)]))


def _tri_mask(a, k, lower):
    a = asarray(a)
    t = a._t
    if t.ndim < 2:   # NumPy: a 1-d input is the rows of a square matrix
        t = t.reshape(1, -1).expand(t.shape[-1] if t.ndim else 1, -1)
    return wrap(t.tril(k) if lower else t.triu(k))


def tril(m, k=0):
    """Lower triangle of the last two axes (matches numpy.tril)."""
    return _tri_mask(m, k, True)


def triu(m, k=0):
    """Upper triangle of the last two axes (matches numpy.triu)."""
    return _tri_mask(m, k, False)


def diag(v, k=0):
    """Diagonal of a 2-D array, or a 2-D array with v on diagonal k (matches numpy.diag)."""
    v = asarray(v)
    if v.ndim == 1:
        return wrap(torch.diag(v._t, k))
    if v.ndim == 2:
        return wrap(torch.diagonal(v._t, k).clone())
    raise ValueError("Input must be 1- or 2-d.")


def diagflat(v, k=0):
    return wrap(torch.diag(asarray(v)._t.reshape(-1), k))


def meshgrid(*xi, copy=True, sparse=False, indexing="xy"):
    """Coordinate arrays (matches numpy.meshgrid; returns a tuple)."""
    if indexing not in ("xy", "ij"):
        raise ValueError("Valid values for `indexing` are 'xy' and 'ij'.")
    ts = [asarray(x)._t.reshape(-1) for x in xi]
    n = len(ts)
    if n == 0:
        return ()
    shapes = []
    for i, t in enumerate(ts):
        s = [1] * n
        s[i] = t.numel()
        shapes.append(s)
    if indexing == "xy" and n > 1:
        for s in shapes:
            s[0], s[1] = s[1], s[0]
    out = [t.reshape(s) for t, s in zip(ts, shapes)]
    if not sparse:
        full = torch.broadcast_shapes(*[o.shape for o in out])
        out = [o.expand(full) for o in out]
        if copy:
            out = [o.contiguous() for o in out]
    return tuple(wrap(o) for o in out)


def indices(dimensions, dtype=int, sparse=False):
    """Grid indices (matches numpy.indices)."""
    grids = meshgrid(*[arange(d, dtype=dtype) for d in dimensions], indexing="ij", sparse=sparse)
    if sparse:
        return grids
    return wrap(torch.stack([g._t for g in grids])) if grids else empty((0,), dtype=dtype)


def fromfunction(function, shape, *, dtype=float, **kwargs):
    return function(*indices(shape, dtype=dtype), **kwargs)


# Reading bytes, files and text is host I/O: NumPy parses on the host, the result is copied onto
# the npu once (as cupy.fromfile/loadtxt/... do). Byte orders other than the native one become native.

def frombuffer(buffer, dtype=float, count=-1, offset=0):
    """Array from a bytes-like object (matches numpy.frombuffer; the data is copied to the npu)."""
    return asarray(np.frombuffer(buffer, dtype=dtype, count=count, offset=offset))


def fromiter(iterable, dtype, count=-1):
    """Array from an iterable (matches numpy.fromiter; the data is copied to the npu)."""
    return asarray(np.fromiter(iterable, dtype=dtype, count=count))


def fromfile(file, dtype=float, count=-1, sep="", offset=0):
    """Array from a binary or text file (matches numpy.fromfile; read on the host, copied to the npu)."""
    return asarray(np.fromfile(file, dtype=dtype, count=count, sep=sep, offset=offset))


def fromstring(string, dtype=float, count=-1, *, sep):
    """Array from text data (matches numpy.fromstring, ``sep`` required as in NumPy 2)."""
    return asarray(np.fromstring(string, dtype=dtype, count=count, sep=sep))


def loadtxt(*args, **kwargs):
    """Array from a text file (matches numpy.loadtxt, all its arguments; parsed on the host, copied
    to the npu)."""
    return asarray(np.loadtxt(*args, **kwargs))


def genfromtxt(*args, **kwargs):
    """Array from a text file with missing values handled (matches numpy.genfromtxt; masked and
    structured results are refused as xp has no such arrays)."""
    return asarray(np.genfromtxt(*args, **kwargs))


def copy(a, order="K", subok=False):
    """Copy of an array (matches numpy.copy, memory order included)."""
    t = as_tensor(a)
    return wrap(in_order(t, check_order(order), copy=True))
