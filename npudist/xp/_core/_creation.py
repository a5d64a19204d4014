"""The creation routine ndarray's methods need: ``asarray`` (what ``pickle`` calls to rebuild an
array, ndarray.__reduce__) and the device argument's check, in the core as CuPy keeps its
conversion in cupy._core. npudist.xp._creation re-exports them beside the other creation routines."""
from .. import _config
from .._convert import as_tensor, check_order, in_order
from .._device import as_torch_device, current_device_id
from .._dtypes import to_dtype
from . import _array
from ._array import wrap


def npu_device(device):
    """The torch device of an xp ``device=`` argument (None: the current npu; ValueError for a
    device that is not an npu)."""
    if device is None:
        return _config.device()
    d = as_torch_device(device)
    if d.type != "npu":
        raise ValueError(f"xp arrays live on npus; device={device!r} is not an npu (use 'npu:N')")
    return d


def asarray(a, dtype=None, order=None, *, device=None, copy=None, like=None):
    """Array from anything array-like (matches numpy.asarray; Array API asarray with copy=).

    xp arrays and npu tensors are returned without a copy (sharing memory) unless dtype asks for a
    conversion; NumPy arrays, Python sequences/scalars and DLPack producers are copied to the npu
    with NumPy's dtype rules. copy=True always copies; copy=False raises ValueError if a copy is needed.
    Unsupported dtypes (uint16/32/64, object, strings) raise UnsupportedDTypeError."""
    dt = None if dtype is None else to_dtype(dtype)
    order = check_order(order)
    is_array = _array.is_array(a)
    if is_array and device is None and (a._t.device.index or 0) != current_device_id():
        device = current_device_id()   # an array of another npu is copied onto the current one (CuPy)
    if is_array and dt is None and copy is None and device is None and order == "K":
        return a
    t = as_tensor(a, dtype=dt, copy=copy, device=None if device is None else npu_device(device))
    if order != "K":
        t2 = in_order(t, order)
        if t2 is not t and copy is False:
            raise ValueError(f"asarray(copy=False): order={order!r} needs a copy")
        t = t2
    return wrap(t)
