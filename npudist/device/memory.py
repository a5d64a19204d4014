"""npu memory API, with torch.cuda.memory's names, keys and units (bytes).

Statistics come from the npu caching allocator (csrc/core/allocator): the keys
of ``memory_stats`` are those of ``torch.cuda.memory_stats``
("allocated_bytes.all.current", "num_ooms", ...). Snapshots
(``_snapshot`` / ``_dump_snapshot``) have PyTorch's snapshot layout, so
``torch.cuda._memory_viz`` (and https://pytorch.org/memory_viz) read them.

Environment:
    PYTORCH_NPU_ALLOC_CONF  allocator settings (docs/memory.md)
    OOM_SNAPSHOT_ENABLE     1: write a snapshot pickle when an allocation fails
    OOM_SNAPSHOT_PATH       directory for those pickles (default: current directory)
"""
from __future__ import annotations

import collections
import os
import pickle
import sys
import threading
import time
from typing import Any

from npudist import _C
from npudist.device._devices import _index, init, is_initialized

__all__ = [
    "empty_cache", "max_memory_allocated", "max_memory_reserved", "mem_get_info", "memory_allocated",
    "memory_reserved", "memory_snapshot", "memory_stats", "memory_stats_as_nested_dict", "memory_summary",
    "reset_accumulated_memory_stats", "reset_max_memory_allocated", "reset_peak_memory_stats",
    "set_per_process_memory_fraction", "get_per_process_memory_fraction", "caching_allocator_alloc",
    "caching_allocator_delete",
]


def mem_get_info(device: Any = None) -> tuple[int, int]:
    """(free, total) physical bytes of the npu, as torch.cuda.mem_get_info."""
    init()
    return tuple(_C._mem_get_info(_index(device)))


def memory_stats_as_nested_dict(device: Any = None) -> dict:
    """Allocator statistics of the npu as nested dicts (torch.cuda.memory_stats_as_nested_dict).

    Empty before npu is initialised, and does not initialise it (as torch.cuda's).
    """
    if not is_initialized():
        return {}
    return _C._memory_stats(_index(device))


def memory_stats(device: Any = None) -> dict[str, Any]:
    """Allocator statistics of the npu, flat and sorted, with torch.cuda.memory_stats' keys.

    Keys: "<stat>.<pool>.<metric>" for stat in allocation, segment, active,
    inactive_split, allocated_bytes, reserved_bytes, active_bytes,
    inactive_split_bytes, requested_bytes; pool in all, small_pool,
    large_pool; metric in current, peak, allocated, freed. Plus num_ooms,
    num_alloc_retries, num_sync_all_streams, num_device_alloc,
    num_device_free, max_split_size (-1: unlimited), and
    oversize_allocations/oversize_segments.<metric>.
    """
    flat = []

    def walk(prefix, obj):
        if isinstance(obj, dict):
            for k, v in obj.items():
                walk(f"{prefix}.{k}" if prefix else k, v)
        else:
            flat.append((prefix, obj))

    walk("", memory_stats_as_nested_dict(device))
    return collections.OrderedDict(sorted(flat))


def _stat(device: Any, stat: str, metric: str) -> int:
    # 0 before npu is initialised, as torch.cuda's (memory_stats(...).get(key, 0))
    stats = memory_stats_as_nested_dict(device)
    return stats[stat]["all"][metric] if stats else 0


def memory_allocated(device: Any = None) -> int:
    """Bytes currently occupied by tensors on the npu (allocator-rounded), as torch.cuda.memory_allocated."""
    return _stat(device, "allocated_bytes", "current")


def max_memory_allocated(device: Any = None) -> int:
    """Peak of memory_allocated since start or reset_peak_memory_stats."""
    return _stat(device, "allocated_bytes", "peak")


def memory_reserved(device: Any = None) -> int:
    """Bytes the allocator holds from the driver (allocated plus cached), as torch.cuda.memory_reserved."""
    return _stat(device, "reserved_bytes", "current")


def max_memory_reserved(device: Any = None) -> int:
    """Peak of memory_reserved since start or reset_peak_memory_stats."""
    return _stat(device, "reserved_bytes", "peak")


def reset_peak_memory_stats(device: Any = None) -> None:
    """Resets the "peak" of every statistic to its current value."""
    init()
    _C._reset_peak_memory_stats(_index(device))


def reset_max_memory_allocated(device: Any = None) -> None:
    """Resets the peak of memory_allocated (torch.cuda.reset_max_memory_allocated; same as reset_peak_memory_stats)."""
    reset_peak_memory_stats(device)


def reset_accumulated_memory_stats(device: Any = None) -> None:
    """Resets the "allocated"/"freed" totals and the counters (num_ooms, ...)."""
    init()
    _C._reset_accumulated_memory_stats(_index(device))


def empty_cache() -> None:
    """Returns every cached, unused segment of every npu to the driver (committed memory drops).

    With expandable segments, the free tail of each segment is unmapped. A no-op
    before npu is initialised (as torch.cuda.empty_cache).
    """
    if is_initialized():
        _C._empty_cache()


def set_per_process_memory_fraction(fraction: float, device: Any = None) -> None:
    """Limits this process to ``fraction`` x capacity of the npu; beyond it allocations raise OutOfMemoryError.

    Raises:
        TypeError: fraction is not a number.
        ValueError: fraction outside (0, 1].
    """
    if isinstance(fraction, bool) or not isinstance(fraction, (int, float)):
        raise TypeError(f"fraction must be a float, got {type(fraction).__name__}")
    init()
    idx = _index(device)
    _C._set_memory_fraction(float(fraction), idx)
    _fractions[idx] = float(fraction)


# fractions set by set_per_process_memory_fraction, per npu index (others: the configured default)
_fractions: dict[int, float] = {}


def get_per_process_memory_fraction(device: Any = None) -> float:
    """The fraction of the npu's capacity this process may use, as torch.cuda.get_per_process_memory_fraction:
    the last set_per_process_memory_fraction for that npu, else PYTORCH_NPU_ALLOC_CONF's
    ``per_process_memory_fraction`` (default 1.0).

    Raises:
        ValueError: PYTORCH_NPU_ALLOC_CONF cannot be parsed (the message names the entry).
    """
    idx = _index(device)
    if idx in _fractions:
        return _fractions[idx]
    from npudist import _env

    conf = _env.get_str("PYTORCH_NPU_ALLOC_CONF", "")
    return float(_C._parse_alloc_config(conf)["per_process_memory_fraction"])


# caching_allocator_alloc's blocks, by pointer: each is held by a uint8 npu tensor, so it is
# an ordinary block of the caching allocator (stream-ordered, counted in memory_stats)
_raw_blocks: dict[int, Any] = {}
_raw_lock = threading.Lock()


def caching_allocator_alloc(size: int, device: Any = None, stream: Any = None) -> int:
    """Allocates ``size`` bytes from the npu caching allocator; returns the device pointer (int).

    As torch.cuda.caching_allocator_alloc: ``device`` is an int, "npu:N" or torch.device
    (default: the current npu); the block belongs to ``stream`` (a torch.npu.Stream; default:
    that npu's default stream) and is reused on other streams only after
    ``caching_allocator_delete`` and the usual stream ordering. ``size`` 0 returns 0.

    Raises:
        TypeError: ``stream`` is not a torch.npu.Stream (torch.cuda also takes a raw stream
            pointer as int; npu streams have no such handle).
        ValueError: ``size`` is negative.
        torch.OutOfMemoryError: the npu has no room (as any allocation).
    """
    import torch

    if not isinstance(size, int) or size < 0:
        raise ValueError(f"caching_allocator_alloc: size must be a non-negative int (bytes), got {size!r}")
    idx = _index(device)
    if stream is None:
        stream = torch.npu.default_stream(idx)
    elif not isinstance(stream, torch.npu.Stream):
        raise TypeError("caching_allocator_alloc: stream must be a torch.npu.Stream or None, got "
                        f"{type(stream).__name__}")
    if size == 0:
        return 0
    with torch.npu.device(idx), torch.npu.stream(stream):
        block = torch.empty(size, dtype=torch.uint8, device=torch.device("npu", idx))
    ptr = block.data_ptr()
    with _raw_lock:
        _raw_blocks[ptr] = block
    return ptr


def caching_allocator_delete(mem_ptr: int) -> None:
    """Returns a block from ``caching_allocator_alloc`` to the caching allocator (0: no-op).

    Raises:
        RuntimeError: ``mem_ptr`` was not returned by caching_allocator_alloc (or was
            deleted already), as torch.cuda's "invalid device pointer".
    """
    if mem_ptr == 0:
        return
    with _raw_lock:
        block = _raw_blocks.pop(mem_ptr, None)
    if block is None:
        raise RuntimeError(f"caching_allocator_delete: invalid device pointer {mem_ptr:#x} (not from "
                           "torch.npu.caching_allocator_alloc, or deleted already)")
    del block


def _fmt(n: float) -> str:
    for unit in ("B  ", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:6.0f} {unit}" if unit == "B  " else f"{n:6.1f} {unit}"
        n /= 1024
    return str(n)


def memory_summary(device: Any = None, abbreviated: bool = False) -> str:
    """A human-readable table of memory_stats for the npu, as torch.cuda.memory_summary."""
    idx = _index(device)
    s = memory_stats(idx)
    rows = [
        ("Allocated memory", "allocated_bytes", True),
        ("Active memory", "active_bytes", True),
        ("Requested memory", "requested_bytes", True),
        ("NPU reserved memory", "reserved_bytes", True),
        ("Non-releasable memory", "inactive_split_bytes", True),
        ("Allocations", "allocation", False),
        ("Active allocs", "active", False),
        ("NPU reserved segments", "segment", False),
        ("Non-releasable allocs", "inactive_split", False),
    ]
    pools = ["all"] if abbreviated else ["all", "large_pool", "small_pool"]
    width = 79
    lines = ["=" * width, f" PyTorch-style npu memory summary, device ID {idx:<2d}".ljust(width - 1) + "|",
             "-" * width,
             f" num_alloc_retries: {s['num_alloc_retries']:<6d} | num_ooms: {s['num_ooms']:<6d}".ljust(width - 1) + "|",
             "=" * width,
             f"{' Metric':<27}| {'Cur Usage':>11} | {'Peak Usage':>11} | {'Tot Alloc':>11} | {'Tot Freed':>11}",
             "-" * width]
    for title, key, is_bytes in rows:
        for pool in pools:
            label = f" {title}" if pool == "all" else f"       from {pool.replace('_pool', '')} pool"
            vals = [s[f"{key}.{pool}.{m}"] for m in ("current", "peak", "allocated", "freed")]
            cells = [(_fmt(v) if is_bytes else f"{v:>10d}") for v in vals]
            lines.append(f"{label:<27}| " + " | ".join(f"{c:>11}" for c in cells))
        lines.append("-" * width)
    for title, key in (("Oversize allocations", "oversize_allocations"), ("Oversize NPU segments", "oversize_segments")):
        vals = [s[f"{key}.{m}"] for m in ("current", "peak", "allocated", "freed")]
        lines.append(f" {title:<26}| " + " | ".join(f"{v:>11d}" for v in vals))
    lines.append("=" * width)
    return "\n".join(lines) + "\n"


def _record_memory_history(enabled: str | None = "all", context: str | None = "all", stacks: str = "python",
                           max_entries: int = sys.maxsize, device: Any = None) -> None:
    """Starts (or with enabled=None stops) recording allocator history for snapshots.

    Args:
        enabled: "state" keeps the allocation context of live blocks; "all" also
            records a trace of allocator events (alloc, free_requested,
            free_completed, segment_alloc/free/map/unmap, oom); None stops.
        context: None records no Python frames (cheapest); anything else
            records the Python stack of each allocation.
        stacks: "python" (C++ frames are not recorded).
        max_entries: trace entries kept per device (oldest dropped first).
    """
    if enabled is True:  # the legacy boolean form
        enabled = "all"
    if enabled is False:
        enabled = None
    if enabled not in (None, "state", "all"):
        raise ValueError(f"enabled must be None, 'state' or 'all', got {enabled!r}")
    if context not in (None, "state", "alloc", "all"):
        raise ValueError(f"context must be None, 'state', 'alloc' or 'all', got {context!r}")
    if stacks not in ("python", "all"):
        raise ValueError(f"stacks must be 'python' or 'all', got {stacks!r}")
    if not isinstance(max_entries, int) or max_entries <= 0:
        raise ValueError(f"max_entries must be a positive int, got {max_entries!r}")
    # no initialisation here, as torch.cuda's: history is often turned on before the device is chosen
    _C._record_memory_history(enabled is not None, enabled == "all", int(max_entries), context is not None)


def _snapshot(device: Any = None) -> dict:
    """The allocator state of every npu in PyTorch's snapshot layout.

    Returns a dict with "segments" (device, address, total_size,
    allocated_size, active_size, requested_size, stream, segment_type,
    is_expandable, blocks: [address, size, requested_size, state, frames])
    and "device_traces" (per device: action, addr, size, stream, time_us,
    frames), as torch.cuda.memory._snapshot. Does not initialise npu.
    """
    return _C._snapshot()


def memory_snapshot() -> list:
    """The segments of every npu (torch.cuda.memory_snapshot)."""
    return _snapshot()["segments"]


def _dump_snapshot(filename: str = "dump_snapshot.pickle") -> None:
    """Writes _snapshot() as a pickle that PyTorch's memory_viz reads."""
    with open(filename, "wb") as f:
        pickle.dump(_snapshot(), f)


def _on_out_of_memory(device: int, requested: int) -> None:
    """OOM observer: with OOM_SNAPSHOT_ENABLE set, dumps a snapshot next to OOM_SNAPSHOT_PATH."""
    from npudist import _env

    if not _env.get_bool("OOM_SNAPSHOT_ENABLE", False):
        return
    directory = _env.get_str("OOM_SNAPSHOT_PATH") or os.getcwd()
    try:
        os.makedirs(directory, exist_ok=True)
        path = os.path.join(directory, f"oom_snapshot_{os.getpid()}_npu{device}_{time.strftime('%Y%m%d_%H%M%S')}.pickle")
        _dump_snapshot(path)
        print(f"npudist: out of memory on npu:{device} ({requested} bytes requested); snapshot written to {path}",
              file=sys.stderr)
    except Exception as err:  # never mask the OutOfMemoryError itself
        print(f"npudist: could not write the OOM snapshot: {err}", file=sys.stderr)


_C._set_oom_observer(_on_out_of_memory)
