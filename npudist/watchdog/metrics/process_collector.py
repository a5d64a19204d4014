"""Collector of this process' CPU time and resident memory (psutil)."""
from __future__ import annotations

import os

import psutil

from npudist.watchdog.metrics import families as fam
from npudist.watchdog.metrics.labels import rank_labels


class ProcessCollector:
    """prometheus_client collector: ``npudist_process_cpu_seconds_total`` (user + system CPU
    seconds of this process, all threads) and ``npudist_process_resident_memory_bytes`` (RSS)."""

    def __init__(self):
        self._proc = psutil.Process()

    def describe(self):
        return []

    def collect(self):
        if self._proc.pid != os.getpid():  # a forked child scraping for itself
            self._proc = psutil.Process()
        base = list(rank_labels())
        with self._proc.oneshot():
            cpu = self._proc.cpu_times()
            rss = self._proc.memory_info().rss
        c = fam.counter("npudist_process_cpu_seconds_total", "User and system CPU time of the rank process in seconds.")
        c.add_metric(base, cpu.user + cpu.system)
        g = fam.gauge("npudist_process_resident_memory_bytes", "Resident set size of the rank process in bytes.")
        g.add_metric(base, rss)
        yield c
        yield g
