"""CuPy's memory pools on npu: ``xp.get_default_memory_pool()`` and ``xp.get_default_pinned_memory_pool()``.

CuPy keeps its own pool of device memory (``cupy.cuda.MemoryPool``) and of pinned host memory
(``cupy.cuda.PinnedMemoryPool``). On npu both already exist below xp: every npu tensor comes from
the npu caching allocator (csrc/core/allocator, docs/memory.md) and pinned host memory from the
npu pinned host allocator. These classes are views of those allocators with CuPy's method names,
so the figures agree with torch's:

* ``MemoryPool.used_bytes()  == torch.npu.memory_allocated()``
* ``MemoryPool.total_bytes() == torch.npu.memory_reserved()``
* ``MemoryPool.free_bytes()  == total_bytes() - used_bytes()`` (cached, unused)
* ``MemoryPool.free_all_blocks() -> torch.npu.empty_cache()``
* ``MemoryPool.set_limit(size=, fraction=) -> torch.npu.set_per_process_memory_fraction``

Figures are for the current npu (``xp.Device``), as CuPy's are for the current GPU.
"""
from __future__ import annotations

import torch

from npudist import _C

from ._memory import MemoryPointer

__all__ = ["MemoryPool", "PinnedMemoryPool", "PinnedMemoryPointer", "get_default_memory_pool",
           "get_default_pinned_memory_pool"]


def _device_index(device=None):
    torch.npu.init()
    return torch.npu.current_device() if device is None else int(device)


class MemoryPool:
    """CuPy's ``cupy.cuda.MemoryPool`` over the npu caching allocator (one allocator per process,
    as CuPy's default pool; blocks are kept per device and per stream by the allocator).

    There is one allocator, so every ``MemoryPool()`` is a view of the same memory:
    ``xp.get_default_memory_pool()`` returns a shared instance. ``allocator=`` (CuPy's custom
    base allocator) is not supported and raises ``NotImplementedError``.
    """

    def __init__(self, allocator=None):
        if allocator is not None:
            raise NotImplementedError("xp.MemoryPool(allocator=...): npu memory always comes from the npu caching "
                                      "allocator; configure it with PYTORCH_NPU_ALLOC_CONF (docs/memory.md)")

    def malloc(self, size):
        """Allocates ``size`` bytes on the current npu; returns an ``xp.MemoryPointer`` (``.ptr``,
        ``.device_id``) that keeps the block alive while referenced.

        Raises ``torch.OutOfMemoryError`` past the capacity or the limit, ``ValueError`` for a
        negative size."""
        size = int(size)
        if size < 0:
            raise ValueError(f"MemoryPool.malloc: size must be >= 0, got {size}")
        t = torch.empty(size, dtype=torch.uint8, device=torch.device("npu", _device_index()))
        return MemoryPointer(t)

    def used_bytes(self):
        """Bytes held by live arrays/tensors on the current npu (``torch.npu.memory_allocated()``)."""
        return torch.npu.memory_allocated(_device_index())

    def total_bytes(self):
        """Bytes the allocator holds from the device, used and cached (``torch.npu.memory_reserved()``)."""
        return torch.npu.memory_reserved(_device_index())

    def free_bytes(self):
        """Bytes held by the allocator but not used (cached free blocks): total_bytes() - used_bytes()."""
        stats = torch.npu.memory_stats(_device_index())
        return stats.get("reserved_bytes.all.current", 0) - stats.get("allocated_bytes.all.current", 0)

    def n_free_blocks(self):
        """Number of cached free blocks on the current npu (from the allocator's snapshot; slow,
        for debugging, as CuPy's)."""
        device = _device_index()
        n = 0
        for seg in torch.npu.memory._snapshot()["segments"]:
            if seg["device"] == device:
                n += sum(1 for b in seg["blocks"] if b["state"] == "inactive")
        return n

    def free_all_blocks(self, stream=None):
        """Returns every cached free block to the device (``torch.npu.empty_cache()``, all npus and
        streams). ``stream=`` is accepted for CuPy's signature; the release is not per stream here."""
        torch.npu.empty_cache()

    def free_all_free(self):
        """Deprecated in CuPy: the same as free_all_blocks()."""
        self.free_all_blocks()

    def set_limit(self, size=None, fraction=None):
        """Caps what this process may reserve on the current npu, as CuPy's ``set_limit``.

        ``size`` in bytes or ``fraction`` of the device's capacity; neither, or 0, removes the cap
        (the cap becomes the whole device). A size above the capacity is the whole device.
        Past the cap, allocations raise ``torch.OutOfMemoryError``. Implemented with
        ``torch.npu.set_per_process_memory_fraction``.

        Raises ValueError: both given, a negative size, or a fraction outside [0, 1]."""
        if size is not None and fraction is not None:
            raise ValueError("set_limit: give size or fraction, not both")
        device = _device_index()
        total = torch.npu.mem_get_info(device)[1]
        if fraction is not None:
            fraction = float(fraction)
            if not 0 <= fraction <= 1:
                raise ValueError(f"set_limit: fraction must be in [0, 1], got {fraction}")
            f = fraction or 1.0
        else:
            size = int(size or 0)
            if size < 0:
                raise ValueError(f"set_limit: size must be >= 0, got {size}")
            # +0.5 byte: the allocator floors total * fraction, so the cap is exactly `size`
            f = 1.0 if size == 0 or size >= total else (size + 0.5) / total
        torch.npu.set_per_process_memory_fraction(f, device)

    def get_limit(self):
        """The cap in bytes on the current npu, 0 when there is none (CuPy's convention)."""
        device = _device_index()
        limit = _C._memory_limit(device)
        return 0 if limit >= torch.npu.mem_get_info(device)[1] else limit

    def __repr__(self):
        return f"<xp.MemoryPool used={self.used_bytes()} total={self.total_bytes()}>"


class PinnedMemoryPointer(MemoryPointer):
    """Pinned host memory from ``PinnedMemoryPool.malloc`` (``.ptr``; ``device_id`` is -1: host)."""
    __slots__ = ()

    def __init__(self, t):
        super().__init__(t)
        self.device_id = -1

    def __repr__(self):
        return f"<xp.PinnedMemoryPointer ptr=0x{self.ptr:x}>"


class PinnedMemoryPool:
    """CuPy's ``cupy.cuda.PinnedMemoryPool`` over the npu pinned host allocator (what
    ``tensor.pin_memory()`` and ``DataLoader(pin_memory=True)`` use).

    Pinned memory on npu is ordinary host memory the allocator marks as pinned, and it caches
    nothing: a freed block returns to the system at once, so ``n_free_blocks()`` is 0 and
    ``free_all_blocks()`` has nothing to release. ``used_bytes``/``total_bytes`` (not in CuPy's
    pinned pool, added for symmetry with MemoryPool) count live pinned allocations.
    """

    def __init__(self, allocator=None):
        if allocator is not None:
            raise NotImplementedError("xp.PinnedMemoryPool(allocator=...): pinned memory always comes from the npu "
                                      "pinned host allocator")

    def malloc(self, size):
        """Allocates ``size`` bytes of pinned host memory; returns a PinnedMemoryPointer."""
        size = int(size)
        if size < 0:
            raise ValueError(f"PinnedMemoryPool.malloc: size must be >= 0, got {size}")
        torch.npu.init()
        return PinnedMemoryPointer(torch.empty(size, dtype=torch.uint8, pin_memory=True))

    @staticmethod
    def _stats():
        return _C._host_memory_stats()

    def used_bytes(self):
        """Bytes of live pinned host allocations."""
        return self._stats()["active_bytes"]["current"]

    def total_bytes(self):
        """Bytes the pinned allocator holds (equal to used_bytes(): nothing is cached)."""
        return self._stats()["allocated_bytes"]["current"]

    def free_bytes(self):
        """Cached unused bytes: always 0 (the pinned allocator caches nothing)."""
        return self.total_bytes() - self.used_bytes()

    def n_free_blocks(self):
        """Cached free blocks: always 0 (the pinned allocator caches nothing)."""
        s = self._stats()
        return s["allocations"]["current"] - s["active_requests"]["current"]

    def free_all_blocks(self):
        """Releases cached free blocks (``torch.accelerator.empty_host_cache()``; nothing is cached)."""
        torch.accelerator.empty_host_cache()

    def __repr__(self):
        return f"<xp.PinnedMemoryPool used={self.used_bytes()}>"


_default_pool = MemoryPool()
_default_pinned_pool = PinnedMemoryPool()


def get_default_memory_pool():
    """CuPy's ``cupy.get_default_memory_pool()``: the MemoryPool view of the npu caching allocator."""
    return _default_pool


def get_default_pinned_memory_pool():
    """CuPy's ``cupy.get_default_pinned_memory_pool()``: the PinnedMemoryPool view of the npu pinned
    host allocator."""
    return _default_pinned_pool
