"""Endpoints started from the environment when npudist is imported in a rank.

A process is a rank when $RANK or $LOCAL_RANK is set (torchrun, npurun, or you). Then

- ``NPUDIST_METRICS_DIR`` (set by ``npurun --metrics-port``): serve on 127.0.0.1, any free
  port, and announce it there for npurun's node endpoint (announce.py);
- ``NPUDIST_METRICS_PORT=P``: serve on ``$NPUDIST_METRICS_ADDR`` (default 127.0.0.1), port
  ``P + LOCAL_RANK`` (so the ranks of one host do not collide; 0 = any free port).

Importing npudist happens in every rank through torch's backend autoload, so ``import torch``
is enough. Processes a rank starts (data-loader workers, compile workers) inherit the
variables but do not serve: the serving rank's pid is put in NPUDIST_METRICS_SERVER_PID.
A malformed value or a port that cannot be bound prints a warning naming the variable and
the rank runs on without that endpoint (importing torch must not fail over metrics).
"""
from __future__ import annotations

import os
import sys

from npudist import _env
from npudist.watchdog.metrics import announce, server

PORT_ENV = "NPUDIST_METRICS_PORT"
OWNER_ENV = "NPUDIST_METRICS_SERVER_PID"


def wanted() -> bool:
    """True when the environment asks this process to serve metrics."""
    if not (_env.raw(PORT_ENV) or _env.raw(announce.DIR_ENV)):
        return False
    if "RANK" not in os.environ and "LOCAL_RANK" not in os.environ:
        return False
    owner = _env.raw(OWNER_ENV)
    return not owner or owner == str(os.getpid())


def from_env() -> list[server.MetricsServer]:
    """Starts the endpoints the environment asks for (see the module docstring); returns them."""
    if not wanted() or server.servers():
        return []
    started = []
    os.environ[OWNER_ENV] = str(os.getpid())
    directory = _env.raw(announce.DIR_ENV)
    if directory:
        try:
            s = server.start_http_server(0, addr="127.0.0.1")
            announce.write(directory, os.getpid(), s.addr, s.port)
            started.append(s)
        except OSError as e:
            _warn(f"cannot serve metrics for npurun ({announce.DIR_ENV}={directory}): {e}")
    base = _env.raw(PORT_ENV)
    if base:
        try:
            port = _env.get_int(PORT_ENV, 0, lo=0, hi=65535)
            local_rank = _env.get_int("LOCAL_RANK", 0, lo=0, hi=65535)
            addr = server.check_addr(server.default_addr(), server.ADDR_ENV)
        except ValueError as e:  # importing torch must not fail over a metrics setting
            _warn(str(e))
            return started
        if port:
            port += local_rank
        try:
            started.append(server.start_http_server(port, addr=addr))
        except (OSError, OverflowError) as e:
            _warn(f"{PORT_ENV}={base} (+ LOCAL_RANK {local_rank}): {e}")
    return started


def _warn(message: str) -> None:
    print(f"npudist.watchdog: warning: {message}; this rank serves no metrics there", file=sys.stderr, flush=True)
