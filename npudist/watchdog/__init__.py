"""npudist.watchdog: Prometheus metrics of a training job (docs/metrics.md).

- ``record_step(step_time_s, tokens)``: the training loop reports each step (cheap, no server
  needed).
- ``start_http_server(port, addr)``: serve this rank's metrics (or set NPUDIST_METRICS_PORT;
  under ``npurun --metrics-port`` npurun serves one endpoint per node).
- ``registry()``: the prometheus_client registry those endpoints serve.
- ``dump_flight_recorder()``, ``flight_recorder_trace()``, ``request_job_dump()``: the hccl
  flight recorder on demand (docs/watchdog.md).

Per-collective bookkeeping stays in the hccl backend (C++); the collectors here read it only
when an endpoint is scraped.
"""
from npudist.watchdog.flight_recorder import dump_flight_recorder, flight_recorder_trace, request_job_dump
from npudist.watchdog.steps import record_step

__all__ = ["record_step", "registry", "start_http_server", "MetricsServer", "dump_flight_recorder",
           "flight_recorder_trace", "request_job_dump"]


def __getattr__(name):
    # prometheus_client is imported on first use, not by record_step's import
    if name in ("start_http_server", "MetricsServer"):
        from npudist.watchdog import server
        return getattr(server, name)
    if name == "registry":
        from npudist.watchdog.process_registry import registry
        return registry
    raise AttributeError(f"module 'npudist.watchdog' has no attribute {name!r}")
