"""Collector of the training-loop series recorded by ``record_step`` (steps.py)."""
from __future__ import annotations

from npudist.watchdog.metrics import families as fam
from npudist.watchdog.metrics.labels import rank_labels
from npudist.watchdog.metrics.steps import STATS, STEP_BUCKETS_S, StepStats


class TrainCollector:
    """prometheus_client collector: ``npudist_train_*`` series from ``record_step`` calls.

    Nothing is exported before the first ``record_step`` (an absent series rather than zeros
    that would look like a stalled loop).
    """

    def __init__(self, stats: StepStats = STATS):
        self.stats = stats

    def describe(self):
        return []  # names are only known at scrape time; registering must not collect

    def collect(self):
        s = self.stats.snapshot()
        if s["steps"] == 0:
            return
        base = list(rank_labels())
        steps = fam.counter("npudist_train_steps_total", "Training steps recorded with record_step.")
        steps.add_metric(base, s["steps"])
        tokens = fam.counter("npudist_train_tokens_total",
                             "Tokens processed by this rank (record_step); rate() gives tokens/s.")
        tokens.add_metric(base, s["tokens"])
        hist = fam.histogram("npudist_train_step_seconds", "Training step time in seconds (record_step).")
        hist.add_metric(base, fam.cumulative_buckets(STEP_BUCKETS_S, s["buckets"]), s["seconds_sum"])
        last = fam.gauge("npudist_train_last_step_seconds", "Time of the last recorded step in seconds.")
        last.add_metric(base, s["last_step_s"])
        tps = fam.gauge("npudist_train_tokens_per_second",
                        "Tokens per second of the last recorded step (tokens / step time; 0 for a 0 s step).")
        tps.add_metric(base, s["last_tokens"] / s["last_step_s"] if s["last_step_s"] > 0 else 0.0)
        yield from (steps, tokens, hist, last, tps)
