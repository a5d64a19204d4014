"""The process' metrics registry: every npudist collector, and nothing else.

A registry of our own (not prometheus_client's global REGISTRY) so that every series the
endpoints serve carries the rank labels; prometheus_client's own process/platform/gc
collectors are not included (``npudist_process_*`` replaces them).
"""
from __future__ import annotations

import threading

from prometheus_client import CollectorRegistry

_lock = threading.Lock()
_registry: CollectorRegistry | None = None


def build_registry() -> CollectorRegistry:
    """A new registry holding the training, hccl, memory and process collectors."""
    from npudist.watchdog.metrics.hccl_collector import HcclCollector
    from npudist.watchdog.metrics.memory_collector import MemoryCollector
    from npudist.watchdog.metrics.process_collector import ProcessCollector
    from npudist.watchdog.metrics.train_collector import TrainCollector
    reg = CollectorRegistry(auto_describe=False)
    for collector in (TrainCollector(), HcclCollector(), MemoryCollector(), ProcessCollector()):
        reg.register(collector)
    return reg


def registry() -> CollectorRegistry:
    """This process' registry (created on first use). ``prometheus_client.generate_latest(registry())``
    gives the text exposition; register your own collectors on it to serve them on the same endpoint."""
    global _registry
    with _lock:
        if _registry is None:
            _registry = build_registry()
        return _registry
