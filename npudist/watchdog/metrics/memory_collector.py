"""Collector of npu memory: torch.npu.memory_stats of the npus this process uses.

Fragmentation is reported as ``1 - allocated / reserved``: the share of the memory the
caching allocator holds from the driver that no tensor uses (cached free blocks and the
free parts of split segments); 0 when nothing is reserved. The narrower "free bytes
stranded inside split blocks" is ``npudist_npu_memory_inactive_split_bytes``.
"""
from __future__ import annotations

import torch

from npudist import _env
from npudist.watchdog.metrics import families as fam
from npudist.watchdog.metrics.labels import rank_labels

# (memory_stats key, metric name, help)
_GAUGES = (
    ("allocated_bytes.all.current", "npudist_npu_memory_allocated_bytes", "Bytes in use by tensors."),
    ("reserved_bytes.all.current", "npudist_npu_memory_reserved_bytes",
     "Bytes the caching allocator holds from the driver (allocated + cached)."),
    ("allocated_bytes.all.peak", "npudist_npu_memory_peak_allocated_bytes",
     "Peak of allocated bytes since start or torch.npu.reset_peak_memory_stats()."),
    ("reserved_bytes.all.peak", "npudist_npu_memory_peak_reserved_bytes",
     "Peak of reserved bytes since start or torch.npu.reset_peak_memory_stats()."),
    ("inactive_split_bytes.all.current", "npudist_npu_memory_inactive_split_bytes",
     "Free bytes inside split (partly used) blocks: memory only same-sized requests can reuse."),
)
_COUNTERS = (
    ("num_ooms", "npudist_npu_memory_ooms_total", "Allocations that failed with out-of-memory."),
    ("num_alloc_retries", "npudist_npu_memory_alloc_retries_total",
     "Allocations that had to free the cache and retry."),
)


def used_devices() -> list[int]:
    """npus with allocator activity in this process; [] before npu is initialised.

    Without any activity yet: the rank's npu (LOCAL_RANK, as npurun assigns them), else npu:0.
    (The scrape thread's current device says nothing: the current device is per thread.)
    Never initialises npu itself: the scrape thread must not change the process' device state.
    """
    npu = getattr(torch, "npu", None)
    if npu is None or not npu.is_initialized():
        return []
    count = npu.device_count()
    used = [d for d in range(count) if npu.max_memory_reserved(d) > 0]
    if used:
        return used
    local = _env.get_int("LOCAL_RANK", 0, lo=0)
    return [local] if local < count else [0]


class MemoryCollector:
    """prometheus_client collector of ``npudist_npu_memory_*`` series, labelled ``device`` ("npu:N")."""

    def describe(self):
        return []

    def collect(self):
        devices = used_devices()
        if not devices:
            return
        base = list(rank_labels())
        gauges = {key: fam.gauge(name, doc, ["device"]) for key, name, doc in _GAUGES}
        counters = {key: fam.counter(name, doc, ["device"]) for key, name, doc in _COUNTERS}
        frag = fam.gauge("npudist_npu_memory_fragmentation_ratio",
                         "1 - allocated/reserved: share of reserved memory no tensor uses (0 when none reserved).",
                         ["device"])
        for d in devices:
            stats = torch.npu.memory_stats(d)
            values = [*base, f"npu:{d}"]
            for key, f in [*gauges.items(), *counters.items()]:
                f.add_metric(values, stats.get(key, 0))
            reserved = stats.get("reserved_bytes.all.current", 0)
            allocated = stats.get("allocated_bytes.all.current", 0)
            frag.add_metric(values, 1.0 - allocated / reserved if reserved > 0 else 0.0)
        yield from gauges.values()
        yield frag
        yield from counters.values()
