"""Device count, selection and properties (torch.cuda's names and semantics)."""
from __future__ import annotations

import warnings
from typing import Any, NamedTuple

import torch

from npudist import _C
from npudist.device._lazy import _lazy_init, init, is_initialized  # noqa: F401  (re-exported)


def _index(device: Any, optional: bool = True) -> int:
    """Resolves ``device`` (None, int, str, torch.device) to a visible npu index.

    Raises:
        ValueError: a non-npu device, or an index outside the visible npus.
    """
    if device is None:
        return current_device() if optional else 0
    if isinstance(device, str):
        device = torch.device(device)
    if isinstance(device, torch.device):
        if device.type != "npu":
            raise ValueError(f"expected an npu device, got {device}")
        if device.index is None:
            return current_device()
        device = device.index
    if not isinstance(device, int):
        raise TypeError(f"device must be an int, str or torch.device, got {type(device).__name__}")
    _C._check_device(device)
    return device


def is_available() -> bool:
    """True if at least one npu is visible. Never raises: an invalid configuration warns and gives False."""
    error = _C._config_error()
    if error:
        warnings.warn(f"npu unavailable: {error}", RuntimeWarning, stacklevel=2)
        return False
    return _C._device_count_no_throw() > 0


def device_count() -> int:
    """Number of visible npus (NPUDIST_DEVICE_COUNT narrowed by ASCEND_RT_VISIBLE_DEVICES).

    Raises:
        ValueError: invalid NPUDIST_DEVICE_COUNT, NPUDIST_DEVICE_MEMORY or ASCEND_RT_VISIBLE_DEVICES.
    """
    return _C._device_count()


def current_device() -> int:
    """Index of the calling thread's current npu (default 0)."""
    init()
    return _C._current_device()


def set_device(device: Any) -> None:
    """Makes ``device`` the calling thread's current npu; initialises npu (as torch.cuda.set_device).

    A negative int is a no-op (no initialisation), as in torch.cuda.

    Raises:
        RuntimeError: the index is out of range of the visible npus (as CUDA's invalid device ordinal).
    """
    if isinstance(device, int) and device < 0:
        return
    init()
    _C._set_device(_index(device))


class device:
    """Context manager that makes ``device`` current and restores the previous one on exit.

    ``device`` may be an int, "npu:N", a torch.device or None (no change);
    a negative index also means no change, as in torch.cuda.device.
    """

    def __init__(self, device: Any):
        self.idx = -1 if device is None else (device if isinstance(device, int) and device < 0 else _index(device))
        self.prev_idx = -1

    def __enter__(self):
        if self.idx >= 0:
            self.prev_idx = current_device()
            if self.prev_idx != self.idx:
                _C._set_device(self.idx)
        return self

    def __exit__(self, *exc):
        if self.idx >= 0 and self.prev_idx != self.idx:
            _C._set_device(self.prev_idx)
        return False


class device_of(device):
    """Context manager that makes the device of tensor ``obj`` current (no-op for non-npu tensors)."""

    def __init__(self, obj: torch.Tensor):
        super().__init__(obj.get_device() if obj.is_npu else -1)


def synchronize(device: Any = None) -> None:
    """Waits for all deferred work on every stream of ``device`` (default: current)."""
    init()
    _C._synchronize(_index(device))


class _NpuDeviceProperties(NamedTuple):
    name: str
    total_memory: int
    multi_processor_count: int
    major: int
    minor: int
    physical_id: int
    is_integrated: bool = False
    is_multi_gpu_board: bool = False


def get_device_properties(device: Any = None) -> _NpuDeviceProperties:
    """Properties of an npu, with torch.cuda's field names where they make sense.

    Fields: name; total_memory (bytes of capacity); multi_processor_count
    (compute units: host cores on the simulated device; torch.compile reads
    it); major, minor (capability); physical_id (index before
    ASCEND_RT_VISIBLE_DEVICES renumbering); is_integrated, is_multi_gpu_board.
    """
    init()
    return _NpuDeviceProperties(**_C._device_properties(_index(device)))


def get_device_capability(device: Any = None) -> tuple[int, int]:
    """(major, minor) capability of an npu, as torch.cuda.get_device_capability."""
    props = get_device_properties(device)
    return props.major, props.minor


def get_amp_supported_dtype() -> list[torch.dtype]:
    """Lower-precision dtypes torch.autocast("npu") accepts: float16 and bfloat16."""
    return [torch.float16, torch.bfloat16]


def get_device_name(device: Any = None) -> str:
    """Name of an npu (get_device_properties(device).name)."""
    return get_device_properties(device).name
