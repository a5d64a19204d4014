"""Training-loop metrics: ``record_step(step_time_s, tokens)``.

The training loop calls ``record_step`` once per optimizer step. It only updates a few
numbers under a lock (about a microsecond); no server needs to run and no Prometheus
object is touched. ``StepCollector`` turns the numbers into metric families when an
endpoint is scraped (see docs/metrics.md):

- ``npudist_train_steps_total`` (counter), ``npudist_train_tokens_total`` (counter):
  ``rate(npudist_train_tokens_total[1m])`` is the tokens/s over the scrape window;
- ``npudist_train_step_seconds`` (histogram of step times, buckets ``STEP_BUCKETS_S``);
- ``npudist_train_last_step_seconds`` and ``npudist_train_tokens_per_second`` (gauges: the
  last step's time and tokens / time).
"""
from __future__ import annotations

import bisect
import math
import operator
import threading

from npudist import fault_inject as _fault_inject

# upper bounds in seconds (no +Inf; the collector adds it): 1 ms .. 10 min
STEP_BUCKETS_S = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 25.0, 60.0,
                  150.0, 600.0)


class StepStats:
    """Counters of the steps recorded in this process (thread-safe)."""

    def __init__(self):
        self._lock = threading.Lock()
        self.reset()

    def reset(self) -> None:
        """Forget every recorded step (tests; a new run in the same process)."""
        with self._lock:
            self.steps = 0
            self.tokens = 0
            self.seconds_sum = 0.0
            self.last_step_s: float | None = None
            self.last_tokens = 0
            self.buckets = [0] * (len(STEP_BUCKETS_S) + 1)  # non-cumulative, last is +Inf

    def record(self, step_time_s: float, tokens: int) -> None:
        """See ``record_step``."""
        if not isinstance(tokens, int) or isinstance(tokens, bool):
            try:
                if isinstance(tokens, bool):
                    raise TypeError
                tokens = operator.index(tokens)  # numpy / 0-d integer tensors
            except TypeError:
                raise TypeError(f"record_step: tokens must be an int (tokens processed in this step), "
                                f"got {type(tokens).__name__}") from None
        try:
            t = float(step_time_s)
        except (TypeError, ValueError):
            raise TypeError(f"record_step: step_time_s must be a number of seconds, "
                            f"got {type(step_time_s).__name__}") from None
        if not (t >= 0.0 and math.isfinite(t)):
            raise ValueError(f"record_step: step_time_s must be a finite number of seconds >= 0, got {step_time_s!r}")
        if tokens < 0:
            raise ValueError(f"record_step: tokens must be >= 0, got {tokens}")
        i = bisect.bisect_left(STEP_BUCKETS_S, t)  # Prometheus buckets are "le": t == bound goes into it
        with self._lock:
            self.steps += 1
            self.tokens += tokens
            self.seconds_sum += t
            self.last_step_s = t
            self.last_tokens = tokens
            self.buckets[i] += 1

    def snapshot(self) -> dict:
        """A consistent copy of the counters (used at scrape time)."""
        with self._lock:
            return {"steps": self.steps, "tokens": self.tokens, "seconds_sum": self.seconds_sum,
                    "last_step_s": self.last_step_s, "last_tokens": self.last_tokens,
                    "buckets": list(self.buckets)}


STATS = StepStats()


def record_step(step_time_s: float, tokens: int) -> None:
    """Record one training step: its wall time in seconds and the tokens it processed.

    Cheap (a lock and a few additions; nothing is exported until an endpoint is scraped) and
    needs no running server: call it every step, on every rank. The values appear as
    ``npudist_train_*`` series (docs/metrics.md) on this rank's endpoint and on npurun's node
    endpoint.

    Args:
        step_time_s: the step's duration in seconds (float >= 0, finite), e.g. the
            difference of two ``time.perf_counter()`` readings around the step.
        tokens: tokens (or samples) this rank processed in the step (int >= 0).

    Raises:
        TypeError: a value is not a number / not an integer.
        ValueError: a negative, NaN or infinite value.
    """
    STATS.record(step_time_s, tokens)
    _fault_inject.count_step()  # the step counter of kind=kill faults (docs/fault_injection.md)
