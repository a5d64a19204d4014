"""``xp.Device``: CuPy's ``cupy.cuda.Device`` for npus (a core module: imports only torch).

The current xp device is the calling thread's current npu (``torch.npu.current_device()``), as
CuPy's current device is the thread's current CUDA device: ``with xp.Device(1):`` and
``xp.Device(1).use()`` call ``torch.npu.set_device``, so xp arrays and torch tensors created
meanwhile agree on where they go. ``a.device`` is the Device holding an array; it also compares
equal to ``torch.device('npu:N')`` and to the string ``'npu:N'`` and has torch.device's ``type``
and ``index``, so code written for the Array API's ``x.device`` keeps working.
"""
from __future__ import annotations

import threading

import torch

from npudist import _C

__all__ = ["Device", "DeviceMismatchError", "as_torch_device", "check_devices", "current_device_id",
           "mixed_device_error"]

_stack = threading.local()   # per thread, as CuPy's: the devices to restore on __exit__


_initialized = False


def current_device_id():
    """Index of the calling thread's current npu (cheap: torch.npu's lazy-init check runs only on
    the first call)."""
    global _initialized
    if not _initialized:
        torch.npu.init()
        _initialized = True
    return _C._current_device()


def _check_id(device_id):
    n = torch.npu.device_count()
    if not 0 <= device_id < n:
        raise ValueError(f"xp.Device({device_id}): invalid device ordinal; this process sees {n} npus "
                         f"(0..{n - 1}; NPUDIST_DEVICE_COUNT / ASCEND_RT_VISIBLE_DEVICES)")


class Device:
    """An npu, by index (matches ``cupy.cuda.Device``).

    ``Device()`` is the current npu; ``Device(n)`` npu n (an int, a Device, ``torch.device('npu:n')``
    or ``'npu:n'``). ``with Device(n):`` makes npu n current for the block (new arrays, kernels and
    the memory pool's figures use it) and restores the previous one on exit; ``use()`` makes it
    current for good. An index outside the visible npus raises ``ValueError`` when the device is
    made current, as CuPy raises when it is used.
    """
    __slots__ = ("id",)

    def __init__(self, device=None):
        if device is None:
            self.id = current_device_id()
        elif isinstance(device, Device):
            self.id = device.id
        elif isinstance(device, (torch.device, str)):
            d = torch.device(device)
            if d.type != "npu":
                raise ValueError(f"xp.Device({device!r}): xp devices are npus ('npu:N' or an index)")
            self.id = d.index if d.index is not None else current_device_id()
        else:
            self.id = int(device)

    # torch.device's attributes, for code written against the Array API's x.device
    @property
    def type(self):
        return "npu"

    @property
    def index(self):
        return self.id

    def torch_device(self):
        """The ``torch.device('npu', id)`` of this device."""
        return torch.device("npu", self.id)

    def use(self):
        """Makes this npu the calling thread's current device (``torch.npu.set_device``)."""
        _check_id(self.id)
        torch.npu.set_device(self.id)

    def __enter__(self):
        _check_id(self.id)
        prev = current_device_id()
        stack = getattr(_stack, "ids", None)
        if stack is None:
            stack = _stack.ids = []
        stack.append(prev)
        if prev != self.id:
            torch.npu.set_device(self.id)
        return self

    def __exit__(self, *exc):
        prev = _stack.ids.pop()
        if current_device_id() != prev:
            torch.npu.set_device(prev)
        return False

    def synchronize(self):
        """Waits for all work queued on this npu's streams (``torch.npu.synchronize(id)``)."""
        torch.npu.synchronize(self.id)

    @property
    def mem_info(self):
        """(free, total) bytes of the npu (``torch.npu.mem_get_info``)."""
        return torch.npu.mem_get_info(self.id)

    @property
    def compute_capability(self):
        """'<major><minor>' of the npu's properties (as CuPy's string)."""
        p = torch.npu.get_device_properties(self.id)
        return f"{p.major}{p.minor}"

    def __int__(self):
        return self.id

    __index__ = __int__

    def __eq__(self, other):
        if isinstance(other, Device):
            return self.id == other.id
        if isinstance(other, (torch.device, str)):
            try:
                d = torch.device(other)
            except RuntimeError:
                return False
            return d.type == "npu" and (d.index if d.index is not None else current_device_id()) == self.id
        return NotImplemented

    def __ne__(self, other):
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    def __hash__(self):
        return hash(("npu", self.id))

    def __lt__(self, other):
        return self.id < Device(other).id if not isinstance(other, Device) else self.id < other.id

    def __repr__(self):
        return f"<NPU Device {self.id}>"


def as_torch_device(device):
    """``device=`` argument (None, Device, torch.device, 'npu:N', int) -> torch.device, or None."""
    if device is None or isinstance(device, torch.device):
        return device
    if isinstance(device, Device):
        return torch.device("npu", device.id)
    if isinstance(device, int) and not isinstance(device, bool):
        return torch.device("npu", device)
    return torch.device(device)


class DeviceMismatchError(ValueError, RuntimeError):
    """Operands on different npus (CuPy raises ValueError; also a RuntimeError, what PyTorch
    raises for tensors on two devices, so either ``except`` catches it)."""


def mixed_device_error(tensors, device_id=None):
    """The error CuPy gives when an operand's device is not the current one and peer access is
    unavailable (xp does not read arrays across npus: copy with ``a.copy()`` under
    ``with xp.Device(n):`` or ``xp.asarray(a)`` first)."""
    if device_id is None:
        device_id = current_device_id()
    devs = [t.device.index or 0 for t in tensors if isinstance(t, torch.Tensor)]
    other = next((d for d in devs if d != device_id), devs[0] if devs else device_id)
    return DeviceMismatchError(
        f"The device where the array resides ({other}) is different from the current device ({device_id}). "
        f"Peer access is unavailable between these devices: copy the array first (xp.asarray(a) or a.copy() "
        f"with the target npu current)")


def check_devices(tensors, device_id=None):
    """Raises DeviceMismatchError unless every tensor is on npu ``device_id`` (default: current)."""
    if device_id is None:
        device_id = current_device_id()
    for t in tensors:
        if (t.device.index or 0) != device_id:
            raise mixed_device_error(tensors, device_id)
