"""Several nodes: every npurun ends in bounded time, non-zero when any rank of the job failed.

torch's agent, once its local ranks succeeded, waits in an exit barrier on the rendezvous
store for every other agent (``exit_barrier_timeout``, 300 s, not configurable through
``elastic_launch``). An agent whose ranks failed never enters that barrier: it stops its
ranks and returns. So

- the agent that hosts the store, with successful ranks, waits 300 s for a failed node,
  blocked in a C++ store call in the main thread, where Python runs no signal handler
  (SIGTERM was acted on only after the 300 s);
- an agent whose store host failed and exited sees its barrier fail, which torch logs and
  treats as success (exit 0), or sees a store error while its ranks run ("did not run").

npurun bounds this from outside, with public APIs only:

- ``Board``: npurun's own keys in the rendezvous store (its own client connection): the
  failures of each node whose job failed for good, the nodes whose ranks succeeded, the
  nodes that finished. ``own_store`` makes npurun itself host the c10d store (the agent
  connects to it with ``is_host=0``), so a failed host node keeps it up for a few seconds
  after its agent returned, until the other nodes read its failure.
- ``AgentPhase``: a torchelastic metrics handler (``metrics.configure``); the agent
  publishes its worker group's state every monitor interval, so npurun knows when the
  local ranks succeeded (and the agent is in its exit barrier).
- ``Watch``: a thread that polls the board; when another node failed and the local ranks
  are done, or the store is gone for ``LOST_AFTER`` s while the agent waits, it ends npurun
  (``on_stuck``) instead of waiting for the agent.
"""
from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from datetime import timedelta

from torch.distributed.elastic import metrics

OP_TIMEOUT = 5.0  # seconds, one store operation of npurun's own client
# seconds to reconnect once the store stopped answering: a lost store host refuses connections, and
# TCPStore retries a refused connect until its timeout (about twice it), which would hold up every
# later board call — the end of an interrupted run included — for ~10 s per call at OP_TIMEOUT
RECONNECT_TIMEOUT = 1.0
POLL = 0.5
LOST_AFTER = 10.0  # store unreachable this long while the agent waits after the local ranks: give up
LINGER = 10.0  # a node hosting the store waits at most this long for the others to read the outcome


class BoardUnreachable(RuntimeError):
    """The rendezvous store did not answer."""


class Board:
    """npurun's keys in the rendezvous store, under ``npurun/<run id>/``.

    ``server`` is npurun's own TCPStore server when it hosts the store; otherwise a client
    is connected on first use (and again after an error). Every call is bounded by
    ``OP_TIMEOUT`` and raises ``BoardUnreachable`` when the store does not answer; once a call
    failed, reconnecting is bounded by ``RECONNECT_TIMEOUT`` until a call succeeds again.
    """

    def __init__(self, host: str, port: int, run_id: str, server=None):
        self.host, self.port, self.server = host, port, server
        self.prefix = f"npurun/{run_id}/"
        self._client = server
        self._failed = False  # the last call got no answer
        self._lock = threading.Lock()

    def _store(self):
        if self._client is None:
            from torch.distributed import TCPStore
            connect = RECONNECT_TIMEOUT if self._failed else OP_TIMEOUT
            client = TCPStore(self.host, self.port, is_master=False, wait_for_workers=False,
                              timeout=timedelta(seconds=connect))
            client.set_timeout(timedelta(seconds=OP_TIMEOUT))
            self._client = client
        return self._client

    def _op(self, fn):
        with self._lock:
            try:
                result = fn(self._store())
            except Exception as e:  # DistNetworkError, DistStoreError, RuntimeError: all mean "no answer"
                self._failed = True
                if self.server is None:
                    self._client = None
                raise BoardUnreachable(str(e).splitlines()[0] if str(e) else type(e).__name__) from None
            self._failed = False
            return result

    def add(self, key: str, n: int = 1) -> int:
        return self._op(lambda s: s.add(self.prefix + key, n))

    def count(self, key: str) -> int:
        return self.add(key, 0)

    def publish_failure(self, record: dict) -> None:
        """Records one node's final failure: ``{"node": label, "failures": [{rank, exitcode, ...}]}``."""
        def op(s):
            i = s.add(self.prefix + "failed", 1)
            s.set(f"{self.prefix}failed/{i}", json.dumps(record))
        self._op(op)

    def failures(self) -> list[dict]:
        """The failure records of every node, in the order they were published."""
        def op(s):
            n = s.add(self.prefix + "failed", 0)
            out = []
            for i in range(1, n + 1):
                key = f"{self.prefix}failed/{i}"
                if s.check([key]):
                    out.append(json.loads(s.get(key)))
            return out
        return self._op(op)


class AgentPhase(metrics.MetricHandler):
    """Follows the agent's ``workers.<role>.<state>`` metrics; ``on_succeeded`` runs (in the
    agent's thread, right before its exit barrier) when the local ranks all succeeded."""

    STATES = ("healthy", "succeeded", "failed", "unhealthy", "stopped")

    def __init__(self, on_succeeded: Callable[[], None] | None = None):
        self.state: str | None = None
        self.since = time.monotonic()
        self.on_succeeded = on_succeeded

    def emit(self, metric_data) -> None:
        parts = metric_data.name.split(".")
        if len(parts) < 3 or parts[0] != "workers" or parts[-1] not in self.STATES:
            return
        state = parts[-1]
        if state != self.state:
            self.state, self.since = state, time.monotonic()
            if state == "succeeded" and self.on_succeeded is not None:
                try:
                    self.on_succeeded()
                except Exception:
                    pass

    def install(self) -> None:
        metrics.configure(self, group="torchelastic")

    @property
    def local_done(self) -> bool:
        """The local ranks all exited successfully (the agent is in, or past, its exit barrier)."""
        return self.state == "succeeded"


class Watch(threading.Thread):
    """Polls the board every ``POLL`` s; remembers the other nodes' failures (``remote``).

    Calls ``on_stuck(reason)`` once, from this thread, when the local ranks are done and
    either another node failed (reason "remote-failure") or the store has not answered for
    ``LOST_AFTER`` s (reason "store-lost").
    """

    def __init__(self, board: Board, phase: AgentPhase, own_node: Callable[[], str],
                 on_stuck: Callable[[str], None]):
        super().__init__(name="npurun-jobwatch", daemon=True)
        self.board, self.phase, self.own_node, self.on_stuck = board, phase, own_node, on_stuck
        self.remote: list[dict] = []
        self.succeeded = 0  # nodes whose ranks all succeeded, as last read
        self.lost_since: float | None = None
        self._halt = threading.Event()

    def stop(self) -> None:
        self._halt.set()

    def poll(self) -> bool:
        """One look at the board (also used by the main thread at the end); False if unreachable."""
        try:
            records = self.board.failures()
            self.succeeded = max(self.succeeded, self.board.count("succeeded"))
        except BoardUnreachable:
            if self.lost_since is None:
                self.lost_since = time.monotonic()
            return False
        self.lost_since = None
        own = self.own_node()
        self.remote = [r for r in records if r.get("node") != own]
        return True

    def run(self) -> None:
        while not self._halt.wait(POLL):
            self.poll()
            if not self.phase.local_done:
                continue
            if self.remote:
                self.on_stuck("remote-failure")
                return
            if self.lost_since is not None and time.monotonic() - self.lost_since >= LOST_AFTER:
                self.on_stuck("store-lost")
                return
