"""Collector of the hccl backend's per-collective bookkeeping (``npudist._C._hccl_stats()``).

The counters, latency buckets and in-flight state are kept in C++ by the backend's work
objects and watchdog; this collector only copies a snapshot when an endpoint is scraped, so
no Python runs per collective. Series (docs/metrics.md), labelled ``pg`` (the c10d group
name, as in flight-recorder dumps), ``pg_desc`` and, per op, ``op``.
"""
from __future__ import annotations

from collections.abc import Callable

from npudist.watchdog.metrics import families as fam
from npudist.watchdog.metrics.labels import rank_labels


def _stats_source() -> Callable[[], dict] | None:
    from npudist import _C
    return getattr(_C, "_hccl_stats", None)


# (stat key, metric name, help) for the per-op counters
_OP_COUNTERS = (
    ("started", "npudist_hccl_collectives_started_total", "Collectives issued on this rank."),
    ("completed", "npudist_hccl_collectives_completed_total", "Collectives that completed successfully."),
    ("failed", "npudist_hccl_collectives_failed_total", "Collectives that failed (error, timeout, abort)."),
    ("bytes", "npudist_hccl_bytes_total", "Payload bytes of completed collectives (nccl-tests' size S)."),
    ("bus_bytes", "npudist_hccl_bus_bytes_total",
     "Payload bytes times nccl-tests' bus factor; rate(bus_bytes)/rate(latency_seconds_sum) is the bus bandwidth."),
)

# (stat key, metric name, help, is counter) for the per-group values
_GROUP_VALUES = (
    ("in_flight", "npudist_hccl_collectives_in_flight", "Collectives issued and not finished.", False),
    ("oldest_in_flight_age_s", "npudist_hccl_oldest_in_flight_age_seconds",
     "Age of the oldest unfinished collective in seconds (0 when none).", False),
    ("timeouts", "npudist_hccl_timeouts_total", "Collectives of the group that timed out.", True),
    ("mismatches", "npudist_hccl_mismatches_total",
     "Hits of the per-collective mismatch check (op, shape or dtype differ across ranks).", True),
    ("straggler_score_s", "npudist_hccl_straggler_score_seconds",
     "Mean seconds per collective the other ranks waited for this rank (recent-weighted; 0: prompt).", False),
)


class HcclCollector:
    """prometheus_client collector of ``npudist_hccl_*`` series.

    Exports nothing when the extension has no ``_hccl_stats`` (an older build) or no hccl
    process group exists yet, except the watchdog series when the watchdog runs.

    Args:
        source: a callable returning the stats dict (default ``npudist._C._hccl_stats``);
            tests pass their own to check the conversion.
    """

    def __init__(self, source: Callable[[], dict] | None = None):
        self._source = source

    def describe(self):
        return []

    def collect(self):
        source = self._source or _stats_source()
        if source is None:
            return
        stats = source()
        base = list(rank_labels())
        yield from self._process_series(stats, base)
        groups = stats.get("groups") or []
        if groups:
            yield from self._group_series(groups, base)
            yield from self._op_series(groups, stats["latency_buckets_s"], base)

    @staticmethod
    def _process_series(stats: dict, base: list[str]):
        age = stats.get("watchdog_heartbeat_age_s")
        if age is not None:
            g = fam.gauge("npudist_hccl_watchdog_heartbeat_age_seconds",
                          "Seconds since the hccl watchdog thread's last heartbeat (grows when it stalls).")
            g.add_metric(base, float(age))
            yield g
        if "flight_recorder_entries" in stats:
            g = fam.gauge("npudist_hccl_flight_recorder_entries", "Entries held in the flight-recorder ring buffer.")
            g.add_metric(base, stats["flight_recorder_entries"])
            yield g

    @staticmethod
    def _group_series(groups: list[dict], base: list[str]):
        info = fam.gauge("npudist_hccl_group_info",
                         "1 per live hccl process group; labels give its name, description, this rank in it and its size.",
                         ["pg", "pg_desc", "group_rank", "group_size"])
        for g in groups:
            info.add_metric([*base, g["group"], g.get("desc", ""), str(g["rank"]), str(g["size"])], 1)
        yield info
        for key, name, doc, is_counter in _GROUP_VALUES:
            f = (fam.counter if is_counter else fam.gauge)(name, doc, ["pg", "pg_desc"])
            for g in groups:
                f.add_metric([*base, g["group"], g.get("desc", "")], g[key])
            yield f

    @staticmethod
    def _op_series(groups: list[dict], bounds: list[float], base: list[str]):
        labels = ["pg", "pg_desc", "op"]
        counters = {key: fam.counter(name, doc, labels) for key, name, doc in _OP_COUNTERS}
        latency = fam.histogram("npudist_hccl_collective_latency_seconds",
                                "Duration of completed collectives in seconds, issue to completion.", labels)
        busbw = fam.gauge("npudist_hccl_bus_bandwidth_bytes_per_second",
                          "Average bus bandwidth of completed collectives since the group started "
                          "(bus_bytes / latency sum); use rate() of the counters for a window.", labels)
        for g in groups:
            for op, c in sorted((g.get("ops") or {}).items()):
                values = [*base, g["group"], g.get("desc", ""), op]
                for key, f in counters.items():
                    f.add_metric(values, c[key])
                latency.add_metric(values, fam.cumulative_buckets(bounds, c["latency_buckets"]), c["seconds_sum"])
                busbw.add_metric(values, c["bus_bytes"] / c["seconds_sum"] if c["seconds_sum"] > 0 else 0.0)
        yield from counters.values()
        yield latency
        yield busbw
