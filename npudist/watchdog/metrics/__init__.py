"""npudist.watchdog.metrics: Prometheus metrics of a training job (docs/metrics.md).

- ``record_step(step_time_s, tokens)``: the training loop reports each step (cheap, no server
  needed).
- ``start_http_server(port, addr)``: serve this rank's metrics (or set NPUDIST_METRICS_PORT;
  under ``npurun --metrics-port`` npurun serves one endpoint per node).
- ``registry()``: the prometheus_client registry those endpoints serve.

Per-collective bookkeeping stays in the hccl backend (C++); the collectors here
(``hccl_collector``, ``memory_collector``, ``process_collector``, ``train_collector``) read it
only when an endpoint is scraped. ``autostart`` starts the endpoint from the environment when
npudist is imported in a rank; ``announce`` tells npurun's node endpoint where it is.
"""
from npudist.watchdog.metrics.steps import record_step

__all__ = ["record_step", "registry", "start_http_server", "MetricsServer"]


def __getattr__(name):
    # prometheus_client is imported on first use, not by record_step's import
    if name in ("start_http_server", "MetricsServer"):
        from npudist.watchdog.metrics import server
        return getattr(server, name)
    if name == "registry":
        from npudist.watchdog.metrics.process_registry import registry
        return registry
    raise AttributeError(f"module 'npudist.watchdog.metrics' has no attribute {name!r}")
