"""Small helpers that build prometheus_client metric families with the rank labels first."""
from __future__ import annotations

import math
from collections.abc import Sequence

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily
from prometheus_client.utils import floatToGoString

from npudist.watchdog.metrics.labels import LABELS


def gauge(name: str, doc: str, labels: Sequence[str] = ()) -> GaugeMetricFamily:
    """A gauge family whose label names are ``rank, local_rank, host`` followed by ``labels``."""
    return GaugeMetricFamily(name, doc, labels=[*LABELS, *labels])


def counter(name: str, doc: str, labels: Sequence[str] = ()) -> CounterMetricFamily:
    """A counter family (``name`` ends in ``_total``) with the rank labels first."""
    return CounterMetricFamily(name, doc, labels=[*LABELS, *labels])


def histogram(name: str, doc: str, labels: Sequence[str] = ()) -> HistogramMetricFamily:
    """A histogram family with the rank labels first."""
    return HistogramMetricFamily(name, doc, labels=[*LABELS, *labels])


def cumulative_buckets(bounds: Sequence[float], counts: Sequence[int]) -> list[tuple[str, float]]:
    """Prometheus ``le`` buckets from ascending upper ``bounds`` (no +Inf) and NON-cumulative
    ``counts`` (``len(bounds) + 1`` entries, the last one counting values above every bound).

    Raises:
        ValueError: the lengths do not match.
    """
    if len(counts) != len(bounds) + 1:
        raise ValueError(f"histogram: {len(counts)} bucket counts for {len(bounds)} bounds "
                         f"(expected {len(bounds) + 1}: one per bound plus +Inf)")
    out, total = [], 0
    for bound, n in zip([*bounds, math.inf], counts):
        total += n
        out.append((floatToGoString(bound), total))
    return out
