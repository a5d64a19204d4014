"""``torch.npu.FloatTensor`` and the other legacy tensor types, as torch_npu defines them.

torch creates ``torch.cuda.FloatTensor``-style type objects only for cpu and cuda, and its type
class (torch.tensortype) is private; torch_npu creates its own in C++
(torch_npu/csrc/utils/TensorType.cpp) for Byte, Char, Double, Float, Int, Long, Short, Half, Bool
and BFloat16. These are npudist's equivalents, plain Python types with a metaclass:

- ``torch.npu.IntTensor([0])`` builds an int32 npu tensor from data, ``torch.npu.FloatTensor(2, 3)``
  an uninitialised one of those sizes, ``torch.npu.FloatTensor()`` an empty one; ``device=`` picks
  the npu (default: the current one). The constructor is torch's legacy one (``Tensor.new``).
- ``isinstance(t, torch.npu.FloatTensor)`` is True for strided float32 tensors on npu.
- ``T.dtype``, ``T.layout``, ``T.is_npu``, ``T.is_sparse``, ``T.is_cuda``; ``x.type()`` of an npu
  tensor names these types (torch's string), and ``x.type(torch.npu.IntTensor)`` /
  ``x.type("torch.npu.IntTensor")`` convert.
- Tensor methods are reachable on the type (``torch.npu.FloatTensor.add``), as on torch's.

Not possible without wrapping torch: ``torch.set_default_tensor_type(torch.npu.FloatTensor)``
(torch accepts only its own private type objects there; use ``torch.set_default_device("npu")``
and ``torch.set_default_dtype`` instead). ``torch.npu.FloatStorage``-style storage types are not
provided.
"""
from __future__ import annotations

import torch

__all__ = ["BFloat16Tensor", "BoolTensor", "ByteTensor", "CharTensor", "DoubleTensor", "FloatTensor",
           "HalfTensor", "IntTensor", "LongTensor", "ShortTensor"]


class _NpuTensorType(type):
    """Metaclass of the npu legacy tensor types (torch_npu's "torch.tensortype" for npu)."""

    _dtype: torch.dtype

    @property
    def dtype(cls) -> torch.dtype:
        return cls._dtype

    @property
    def layout(cls) -> torch.layout:
        return torch.strided

    @property
    def is_npu(cls) -> bool:
        return True

    @property
    def is_cuda(cls) -> bool:
        return False

    @property
    def is_sparse(cls) -> bool:
        return False

    def __instancecheck__(cls, obj) -> bool:
        return (isinstance(obj, torch.Tensor) and obj.device.type == "npu" and obj.dtype == cls._dtype
                and obj.layout == torch.strided)

    def __subclasscheck__(cls, sub) -> bool:
        return sub is cls

    def __getattr__(cls, name):
        # torch's type objects carry torch.Tensor's methods (torch.cuda.FloatTensor.add).
        if name.startswith("__"):
            raise AttributeError(name)
        try:
            return getattr(torch.Tensor, name)
        except AttributeError:
            raise AttributeError(f"type object '{cls.__module__}.{cls.__qualname__}' has no attribute "
                                 f"'{name}'") from None


def _new(cls, *args, device=None, **kwargs):
    """The legacy constructor: from data, from sizes, or empty (module docstring)."""
    if device is None:
        device = torch.device("npu", torch.npu.current_device())
    else:
        device = torch.device(device)
        if device.type != "npu":
            raise RuntimeError(f"{cls.__module__}.{cls.__qualname__}: legacy constructor expects device type npu "
                               f"but device type {device.type} was passed")
        if device.index is None:
            device = torch.device("npu", torch.npu.current_device())
    # Tensor.new is torch's legacy constructor for the prototype's device and dtype.
    return torch.empty(0, dtype=cls._dtype, device=device).new(*args, **kwargs)


def _make(name: str, dtype: torch.dtype) -> type:
    cls = _NpuTensorType(name, (), {"_dtype": dtype, "__new__": _new, "__module__": "torch.npu",
                                    "__qualname__": name,
                                    "__doc__": f"torch.npu.{name}: npu {dtype} tensors (legacy type, torch_npu's)."})
    # The type's C-level name is the dotted one torch's own type objects have, so
    # Tensor.type(torch.npu.IntTensor), which reads it, converts to it.
    cls.__name__ = f"torch.npu.{name}"
    return cls


ByteTensor = _make("ByteTensor", torch.uint8)
CharTensor = _make("CharTensor", torch.int8)
DoubleTensor = _make("DoubleTensor", torch.float64)
FloatTensor = _make("FloatTensor", torch.float32)
IntTensor = _make("IntTensor", torch.int32)
LongTensor = _make("LongTensor", torch.int64)
ShortTensor = _make("ShortTensor", torch.int16)
HalfTensor = _make("HalfTensor", torch.float16)
BoolTensor = _make("BoolTensor", torch.bool)
BFloat16Tensor = _make("BFloat16Tensor", torch.bfloat16)
