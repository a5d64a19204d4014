"""npudist.watchdog: Prometheus metrics of a training job (docs/metrics.md).

- ``record_step(step_time_s, tokens)``: the training loop reports each step (cheap, no server
  needed).
"""
from npudist.watchdog.steps import record_step

__all__ = ["record_step"]
