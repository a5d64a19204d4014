"""``param.data = t`` between cpu and npu tensors (what ``module.to()``-style code and FSDP2's
``fully_shard`` of a materialised cpu module do).

``Tensor.set_data`` asks ``aten::_has_compatible_shallow_copy_type`` whether the two tensors'
implementations are interchangeable; PyTorch's answer (TensorImpl::has_compatible_shallow_copy_type)
accepts any two dense tensors only for a fixed list of in-tree backends (CPU, CUDA, XPU, ...),
so cpu <-> npu raised "incompatible tensor type". npu tensors are plain dense strided tensors
(TensorImpl with a storage, like CPU ones), so the same rule applies to them; this kernel says
so for calls that involve an npu tensor (the PrivateUse1 key wins dispatch over CPU).
"""
import torch

_lib = None
_DENSE_DEVICES = ("cpu", "npu")


def _dense(t):
    return t.layout == torch.strided and not t.is_quantized and not t.is_nested and t.device.type in _DENSE_DEVICES


def _compatible(self, other):
    if self.device.type == other.device.type and self.layout == other.layout \
            and self.is_quantized == other.is_quantized and self.is_nested == other.is_nested:
        return True
    return _dense(self) and _dense(other)


def register():
    """Registers the PrivateUse1 kernel of aten::_has_compatible_shallow_copy_type (once)."""
    global _lib
    if _lib is None:
        lib = torch.library.Library("aten", "IMPL")
        lib.impl("_has_compatible_shallow_copy_type", _compatible, "PrivateUse1")
        _lib = lib
