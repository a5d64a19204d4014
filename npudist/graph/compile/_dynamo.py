"""The npu device interface for Dynamo and Inductor (``torch._dynamo.device_interface``).

Dynamo and Inductor reach a device's runtime only through a
``DeviceInterface`` subclass: current device and stream, events, device
properties (reduction splitting reads ``multi_processor_count``), memory.
This one forwards to ``torch.npu`` (npudist.device), as ``CudaInterface``
forwards to ``torch.cuda``. It is registered for "npu" and "npu:N".
"""
from __future__ import annotations

from typing import Any

import torch
from torch._dynamo.device_interface import (
    DeviceInterface,
    caching_worker_current_devices,
    caching_worker_device_properties,
)

import npudist.device as npu


def _index(device: Any) -> int | None:
    if isinstance(device, str):
        device = torch.device(device)
    if isinstance(device, torch.device):
        if device.type != "npu":
            raise ValueError(f"expected an npu device, got {device}")
        return device.index
    return device


class NPUInterface(DeviceInterface):
    """``DeviceInterface`` for npu (the simulated device: compute is synchronous,
    streams order deferred work such as collectives; see docs/architecture.md, "Execution model")."""

    device = npu.device
    Event = npu.Event
    Stream = npu.Stream

    class Worker:
        """Device queries usable in Inductor's compile workers (values recorded in the parent)."""

        @staticmethod
        def set_device(device: int) -> None:
            caching_worker_current_devices["npu"] = device

        @staticmethod
        def current_device() -> int:
            if "npu" in caching_worker_current_devices:
                return caching_worker_current_devices["npu"]
            return npu.current_device()

        @staticmethod
        def get_device_properties(device: Any = None) -> Any:
            index = _index(device)
            if index is None:
                index = NPUInterface.Worker.current_device()
            if "npu" not in caching_worker_device_properties:
                caching_worker_device_properties["npu"] = [
                    npu.get_device_properties(i) for i in range(npu.device_count())
                ]
            return caching_worker_device_properties["npu"][index]

    current_device = staticmethod(npu.current_device)
    set_device = staticmethod(npu.set_device)
    device_count = staticmethod(npu.device_count)
    stream = staticmethod(npu.stream)
    current_stream = staticmethod(npu.current_stream)
    set_stream = staticmethod(npu.set_stream)
    synchronize = staticmethod(npu.synchronize)
    get_device_properties = staticmethod(npu.get_device_properties)
    memory_allocated = staticmethod(npu.memory_allocated)

    @staticmethod
    def _set_stream_by_id(stream_id: int, device_index: int, device_type: int) -> None:
        npu.set_stream(npu.Stream(stream_id=stream_id, device_index=device_index, device_type=device_type))

    @staticmethod
    def get_raw_stream(device_idx: int) -> int:
        # npu kernels take no stream argument; the id identifies the stream in generated code
        return npu.current_stream(device_idx).stream_id

    @staticmethod
    def exchange_device(device: int) -> int:
        previous = npu.current_device()
        if device >= 0 and device != previous:
            npu.set_device(device)
        return previous

    @staticmethod
    def maybe_exchange_device(device: int) -> int:
        return NPUInterface.exchange_device(device)

    @staticmethod
    def is_available() -> bool:
        return npu.is_available()

    @staticmethod
    def get_compute_capability(device: Any = None) -> int:
        major, minor = npu.get_device_capability(device)
        return major * 10 + minor

    @staticmethod
    def is_bf16_supported(including_emulation: bool = False) -> bool:
        return True

    @staticmethod
    def is_triton_capable(device: Any = None) -> bool:
        return False
