"""npu streams and events: torch.Stream / torch.Event subclasses with torch.cuda's API.

Compute on the simulated npu is synchronous; a stream orders deferred work
(collectives, host functions). A kernel issued on a stream first completes
what that stream was made to wait for (docs/architecture.md, "Execution model").
"""
from __future__ import annotations

from typing import Any

import torch

from npudist.device._devices import _index, init

# (lowest, greatest) priority, as torch.cuda.Stream.priority_range() returns it: torch_npu's streams
# take -1 (high) or 0 (low). Priorities outside are clamped into it, as CUDA does.
PRIORITY_RANGE = (0, -1)
# (device index, stream id) -> the priority the stream was created with, so a stream wrapped again
# (current_stream() of a stream made current) reports it too. Stream ids are never reused.
_priorities: dict[tuple[int, int], int] = {}


class Stream(torch.Stream):
    """An npu stream (torch.cuda.Stream's API).

    Args:
        device: npu to create it on (default: current).
        priority: lower is higher, clamped into :attr:`priority_range` (0 and -1, as torch_npu's
            streams; CUDA clamps the same way) and reported by :attr:`priority`; the simulated
            device runs deferred work in issue order regardless of priority.
    """

    def __new__(cls, device: Any = None, priority: int = 0, **kwargs):
        if "stream_id" in kwargs:  # re-wrapping an existing stream
            return super().__new__(cls, **kwargs)
        init()
        low, high = PRIORITY_RANGE
        priority = min(max(int(priority), high), low)
        stream = super().__new__(cls, device=torch.device("npu", _index(device)), priority=priority)
        _priorities[(stream.device_index, stream.stream_id)] = priority
        return stream

    @property
    def priority(self) -> int:
        """The stream's priority (torch.cuda.Stream.priority): what it was created with, clamped; 0
        for the default stream."""
        return _priorities.get((self.device_index, self.stream_id), 0)

    @staticmethod
    def priority_range() -> tuple[int, int]:
        """(lowest, greatest) stream priority, as torch.cuda.Stream.priority_range(): (0, -1)."""
        return PRIORITY_RANGE

    def wait_event(self, event: Event) -> None:
        """Makes future work on this stream wait for ``event``."""
        event.wait(self)

    def wait_stream(self, stream: torch.Stream) -> None:
        """Makes future work on this stream wait for everything ``stream`` was made to wait for so far."""
        self.wait_event(stream.record_event())

    def record_event(self, event: torch.Event | None = None) -> torch.Event:
        """Records ``event`` (a new one if None) on this stream and returns it."""
        if event is None:
            event = Event()
        event.record(self)
        return event

    @property
    def npu_stream(self) -> int:
        """The stream's handle as an int (torch_npu's ``npu_stream``, torch.cuda's ``cuda_stream``):
        on the simulated driver it is the stream's id, unique per npu; torch_npu gives the
        aclrtStream pointer. Only for identifying the stream: there is no native stream object."""
        return self.stream_id

    def __repr__(self):
        return f"<npudist.device.Stream device={self.device} stream_id={self.stream_id}>"


def _wrap(s: torch.Stream) -> Stream:
    return Stream(stream_id=s.stream_id, device_index=s.device_index, device_type=s.device_type)


class _NpuEventMeta(type(torch.Event)):
    def __instancecheck__(cls, obj):
        return isinstance(obj, torch.Event) and obj.device is not None and obj.device.type == "npu"


class Event(torch.Event, metaclass=_NpuEventMeta):
    """An npu event (torch.cuda.Event's API): record, query, synchronize, wait, elapsed_time (ms).

    Instances are plain ``torch.Event`` objects on npu (PyTorch's C methods,
    e.g. elapsed_time, accept only exact torch.Event instances);
    ``isinstance(e, torch.npu.Event)`` holds for any npu torch.Event.
    ``record``/``wait`` default to the current npu stream.

    Args:
        enable_timing: required on both events for elapsed_time.
        blocking: accepted for API compatibility (waits always block the caller).
        interprocess: not supported (ValueError).
    """

    def __new__(cls, enable_timing: bool = False, blocking: bool = False, interprocess: bool = False):
        if interprocess:
            raise ValueError("interprocess npu events are not supported")
        return torch.Event(device="npu", enable_timing=enable_timing, blocking=blocking)


def current_stream(device: Any = None) -> Stream:
    """The calling thread's current stream on ``device`` (default: current npu)."""
    init()
    return _wrap(torch._C._accelerator_getStream(_index(device)))


def default_stream(device: Any = None) -> Stream:
    """The default stream of ``device`` (stream id 0)."""
    init()
    current = torch._C._accelerator_getStream(_index(device))
    return Stream(stream_id=0, device_index=current.device_index, device_type=current.device_type)


def set_stream(stream: torch.Stream) -> None:
    """Makes ``stream`` current on its device for the calling thread."""
    if stream is None:
        return
    init()
    torch._C._accelerator_setStream(stream)


class StreamContext:
    """Context manager selecting ``stream`` (and its device) and restoring both on exit."""

    def __init__(self, stream: torch.Stream | None):
        if stream is not None and not isinstance(stream, torch.Stream):
            raise TypeError(f"torch.npu.stream() expects a torch.npu.Stream or None, got {type(stream).__name__}")
        self.stream = stream
        self.prev_stream = None
        self.prev_device = None

    def __enter__(self):
        if self.stream is None:
            return self
        from npudist import _C
        from npudist.device._devices import current_device

        self.prev_device = current_device()
        if self.stream.device_index != self.prev_device:
            _C._set_device(self.stream.device_index)
        self.prev_stream = current_stream(self.stream.device_index)
        set_stream(self.stream)
        return self

    def __exit__(self, *exc):
        if self.stream is None:
            return False
        from npudist import _C

        set_stream(self.prev_stream)
        if self.prev_device != self.stream.device_index:
            _C._set_device(self.prev_device)
        return False


def stream(stream: torch.Stream | None) -> StreamContext:
    """Context manager: ``with torch.npu.stream(s): ...`` runs the block with ``s`` current."""
    return StreamContext(stream)
