"""A rank's own HTTP endpoint: ``start_http_server`` (prometheus_client's WSGI server in a
daemon thread, serving this process' registry at any path, conventionally /metrics)."""
from __future__ import annotations

import ipaddress
import os
import threading
from dataclasses import dataclass, field

from npudist import _env

ADDR_ENV = "NPUDIST_METRICS_ADDR"
DEFAULT_ADDR = "127.0.0.1"


@dataclass
class MetricsServer:
    """A running endpoint. ``url`` is what Prometheus scrapes; ``stop()`` closes it."""
    addr: str
    port: int
    _httpd: object = field(repr=False, default=None)
    _thread: threading.Thread | None = field(repr=False, default=None)

    @property
    def url(self) -> str:
        host = f"[{self.addr}]" if ":" in self.addr else self.addr
        return f"http://{host}:{self.port}/metrics"

    def stop(self) -> None:
        """Stops serving and closes the socket (idempotent)."""
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None
        with _lock:
            if self in _servers:
                _servers.remove(self)


_lock = threading.Lock()
_servers: list[MetricsServer] = []


def default_addr() -> str:
    """$NPUDIST_METRICS_ADDR, else 127.0.0.1 (metrics stay on the machine unless you say otherwise)."""
    return _env.get_str(ADDR_ENV, DEFAULT_ADDR)


def check_port(port, what: str) -> int:
    """``port`` as an int in 0..65535 (0: any free port).

    Raises:
        ValueError: naming ``what`` (the argument or variable the value came from).
    """
    try:
        value = int(port)
    except (TypeError, ValueError):
        raise ValueError(f"{what}: expected a TCP port number (0-65535, 0 = any free port), got {port!r}") from None
    if not 0 <= value <= 65535 or isinstance(port, bool):
        raise ValueError(f"{what}: expected a TCP port number (0-65535, 0 = any free port), got {port!r}")
    return value


def check_addr(addr: str, what: str) -> str:
    """``addr`` if it is an IPv4/IPv6 address or a host name; raises ValueError naming ``what``."""
    if not isinstance(addr, str) or not addr.strip():
        raise ValueError(f"{what}: expected an address to bind, such as 127.0.0.1 or 0.0.0.0, got {addr!r}")
    try:
        ipaddress.ip_address(addr)
    except ValueError:
        if any(c.isspace() or c in "/:[]" for c in addr):
            raise ValueError(f"{what}: {addr!r} is neither an IP address nor a host name "
                             f"(e.g. 127.0.0.1, 0.0.0.0 or ::1)") from None
    return addr


def start_http_server(port: int = 0, addr: str | None = None, registry=None) -> MetricsServer:
    """Serve this process' metrics over HTTP (Prometheus text format) from a daemon thread.

    Scraping runs the collectors (npudist_hccl_*, npudist_npu_memory_*, npudist_train_*,
    npudist_process_*); nothing runs between scrapes. Jobs started by ``npurun --metrics-port``
    need not call this (npurun serves one endpoint per node); without npurun, set
    ``NPUDIST_METRICS_PORT`` or call this in each rank (docs/metrics.md).

    Args:
        port: TCP port; 0 picks a free one (read it from ``.port``).
        addr: address to bind; default $NPUDIST_METRICS_ADDR, else 127.0.0.1.
        registry: what to serve; default ``npudist.watchdog.metrics.registry()``.

    Returns:
        MetricsServer with ``addr``, ``port``, ``url`` and ``stop()``.

    Raises:
        ValueError: a malformed port or address.
        OSError: the address cannot be bound (e.g. the port is in use).
    """
    from prometheus_client import start_http_server as _serve

    from npudist.watchdog.metrics.process_registry import registry as _default_registry
    port = check_port(port, "start_http_server(port=...)")
    addr = check_addr(addr if addr is not None else default_addr(),
                      "start_http_server(addr=...)" if addr is not None else ADDR_ENV)
    try:
        httpd, thread = _serve(port, addr=addr, registry=registry if registry is not None else _default_registry())
    except OSError as e:
        raise OSError(e.errno, f"npudist metrics: cannot serve on {addr}:{port}: {e.strerror or e}; "
                               f"pick another port (0 = any free port) or stop what uses it") from None
    server = MetricsServer(addr=addr, port=httpd.server_port, _httpd=httpd, _thread=thread)
    with _lock:
        _servers.append(server)
    return server


def _forget_in_forked_child() -> None:
    # a forked child (a fork-started DataLoader worker) has no serving thread but would keep the
    # listening socket open, so a scraper could connect to a port nobody answers once the rank
    # died; the child closes its copy and forgets the servers (stop() would wait for a thread
    # that does not exist in it)
    global _lock
    _lock = threading.Lock()
    for srv in _servers:
        if srv._httpd is not None:
            try:
                srv._httpd.socket.close()
            except OSError:
                pass
            srv._httpd = None
    _servers.clear()


os.register_at_fork(after_in_child=_forget_in_forked_child)


def servers() -> list[MetricsServer]:
    """The endpoints this process started and did not stop."""
    with _lock:
        return list(_servers)
