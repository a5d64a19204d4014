"""npudist.watchdog: the Python face of the hccl watchdog (docs/watchdog.md).

The watchdog itself runs in C++ inside the hccl backend (a thread per process: collective
timeouts, the heartbeat monitor, desync and straggler reports, the flight recorder). From
Python:

- ``watchdog_status()``: this process's view now — per hccl group its in-flight collectives,
  the age of the oldest, timeouts, mismatches and straggler score, plus the watchdog's
  heartbeat age and the flight recorder's size (``npudist.watchdog.status``);
- ``stragglers(min_score_s=0.0)``: the groups in which this rank keeps the others waiting,
  slowest first;
- ``dump_flight_recorder()``, ``flight_recorder_trace()``, ``request_job_dump()``: the flight
  recorder on demand (``npudist.watchdog.flight_recorder``).

The Prometheus export of these and other series is the subpackage
:mod:`npudist.watchdog.metrics` (``record_step``, ``start_http_server``, ``registry``).
"""
from npudist.watchdog.flight_recorder import dump_flight_recorder, flight_recorder_trace, request_job_dump
from npudist.watchdog.status import stragglers, watchdog_status

__all__ = ["watchdog_status", "stragglers", "dump_flight_recorder", "flight_recorder_trace", "request_job_dump",
           "metrics"]


def __getattr__(name):
    if name == "metrics":
        import importlib
        return importlib.import_module("npudist.watchdog.metrics")
    raise AttributeError(f"module 'npudist.watchdog' has no attribute {name!r}")
