"""npu memory queries, with torch.cuda's names and units (bytes).

This is the device core's memory API over the simple allocator; the caching
allocator issue adds memory_stats, memory_summary and snapshots.
"""
from __future__ import annotations

from typing import Any

from npudist import _C
from npudist.device._devices import _index, init


def mem_get_info(device: Any = None) -> tuple[int, int]:
    """(free, total) physical bytes of the npu, as torch.cuda.mem_get_info."""
    init()
    return tuple(_C._mem_get_info(_index(device)))


def memory_stats_as_nested_dict(device: Any = None) -> dict:
    """Allocator statistics of the npu, with the stat names and pools of torch.cuda.memory_stats."""
    init()
    return _C._memory_stats(_index(device))


def memory_allocated(device: Any = None) -> int:
    """Bytes currently occupied by tensors on the npu (allocator-rounded), as torch.cuda.memory_allocated."""
    return memory_stats_as_nested_dict(device)["allocated_bytes"]["all"]["current"]


def max_memory_allocated(device: Any = None) -> int:
    """Peak of memory_allocated since start or reset_peak_memory_stats."""
    return memory_stats_as_nested_dict(device)["allocated_bytes"]["all"]["peak"]


def memory_reserved(device: Any = None) -> int:
    """Bytes the allocator holds from the driver (allocated plus cached), as torch.cuda.memory_reserved."""
    return memory_stats_as_nested_dict(device)["reserved_bytes"]["all"]["current"]


def max_memory_reserved(device: Any = None) -> int:
    """Peak of memory_reserved since start or reset_peak_memory_stats."""
    return memory_stats_as_nested_dict(device)["reserved_bytes"]["all"]["peak"]


def reset_peak_memory_stats(device: Any = None) -> None:
    """Resets the peaks tracked by max_memory_allocated / max_memory_reserved."""
    init()
    _C._reset_peak_memory_stats(_index(device))


def empty_cache() -> None:
    """Returns every cached, unused segment of every npu to the driver."""
    init()
    _C._empty_cache()
