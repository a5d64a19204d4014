"""The node's metrics endpoint (``--metrics-port``): every local rank's series in one scrape.

Each rank serves its own exposition on 127.0.0.1, on a free port it announces in the job's
``NPUDIST_METRICS_DIR`` (npudist.watchdog.metrics.announce); ranks run no Python for metrics between
scrapes. When this endpoint is scraped, ``NodeCollector``

- finds the ranks of the current attempt among npurun's own child processes (their
  environment names LOCAL_RANK, RANK and TORCHELASTIC_RESTART_COUNT);
- fetches the announced expositions of those that run (in parallel, bounded by
  ``FETCH_TIMEOUT``), parses them with ``prometheus_client.parser`` and re-exposes their
  families merged (a family's samples from every rank under one HELP/TYPE);
- adds what npurun knows itself: ``npudist_rank_up`` (1 while the rank's process runs, 0
  once it ended or before it started), ``npudist_rank_exit_code`` (once npurun saw the
  rank end: its exit code, or minus the signal number that killed it, as
  ``subprocess.Popen.returncode``), ``npudist_rank_metrics_up`` (its exposition was read
  in this scrape) and ``npudist_npurun_restarts``.

With ``--metrics-linger S`` the endpoint stays up S seconds after the job ended (a signal
ends the wait), so Prometheus records the final state of every rank.
"""
from __future__ import annotations

import os
import shutil
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

FETCH_TIMEOUT = 3.0  # seconds per rank exposition; a rank that does not answer is metrics_up 0
LABELS = ("rank", "local_rank", "host")


class NodeCollector:
    """prometheus_client collector of the node's ranks (see the module docstring).

    Args:
        directory: the job's announcement directory (NPUDIST_METRICS_DIR of its ranks).
        rank_envs: returns the current attempt's environment of each local rank
            ({local_rank: env}, empty before the first attempt), as torch's agent set it.
        host: the ``host`` label (npurun's host name, as the ranks use it).
    """

    def __init__(self, directory: str, rank_envs: Callable[[], dict[int, dict[str, str]]], host: str):
        self.directory = directory
        self.rank_envs = rank_envs
        self.host = host
        self.exit_codes: dict[tuple[str, int], int] = {}  # (restart count, local rank) -> exit code
        self._identity: dict[int, tuple[str, str, str] | None] = {}  # pid -> (LOCAL_RANK, RANK, restart count)
        self._lock = threading.Lock()
        self._pool = ThreadPoolExecutor(max_workers=8, thread_name_prefix="npurun-metrics-fetch")

    def describe(self):
        return []

    # --- npurun's own knowledge of its ranks -------------------------------------------
    def _identify(self, proc) -> tuple[str, str, str] | None:
        if proc.pid not in self._identity:
            try:
                env = proc.environ()
                ident = (env["LOCAL_RANK"], env.get("RANK", ""), env.get("TORCHELASTIC_RESTART_COUNT", "0"))
            except Exception:  # not a rank (no LOCAL_RANK), or gone already
                ident = None
            self._identity[proc.pid] = ident
        return self._identity[proc.pid]

    def _rank_processes(self, restart: str) -> dict[int, object]:
        """{local_rank: psutil.Process} of the current attempt's ranks among npurun's children."""
        import psutil
        out = {}
        for proc in psutil.Process().children(recursive=False):
            ident = self._identify(proc)
            if ident is not None and ident[2] == restart:
                out[int(ident[0])] = proc
        return out

    def _ended(self, proc) -> int | None:
        """Exit code of a child that ended but was not reaped yet (without reaping it), else None."""
        import psutil
        try:
            if proc.status() != psutil.STATUS_ZOMBIE:
                return None
        except psutil.NoSuchProcess:
            return None
        try:
            info = os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except (ChildProcessError, OSError):
            return None
        if info is None:
            return None
        return info.si_status if info.si_code == os.CLD_EXITED else -info.si_status

    def record_exit(self, restart: str, local_rank: int, code: int) -> None:
        """Remember how a rank ended (npurun's final outcome, or seen at a scrape)."""
        with self._lock:
            self.exit_codes[(restart, local_rank)] = code

    # --- the rank expositions ----------------------------------------------------------
    @staticmethod
    def _fetch(record: dict) -> str:
        host = record.get("addr") or "127.0.0.1"
        url = f"http://{host}:{int(record['port'])}/metrics"
        with urllib.request.urlopen(url, timeout=FETCH_TIMEOUT) as r:
            return r.read().decode("utf-8", errors="replace")

    def collect(self):
        from prometheus_client.core import GaugeMetricFamily
        from prometheus_client.parser import text_string_to_metric_families

        from npudist.watchdog.metrics import announce

        envs = self.rank_envs() or {}
        restart = next(iter(envs.values()), {}).get("TORCHELASTIC_RESTART_COUNT", "0")
        procs = self._rank_processes(restart) if envs else {}
        records = announce.read(self.directory)
        running: dict[int, object] = {}
        with self._lock:
            for lr, proc in procs.items():
                code = self._ended(proc)
                if code is None:
                    running[lr] = proc
                else:
                    self.exit_codes[(restart, lr)] = code
        # an announcement counts when its pid is a running rank of this attempt or a process under it
        pending = {}
        for lr, proc in running.items():
            record = records.get(proc.pid) or self._announced_below(proc, records)
            if record is not None:
                pending[lr] = self._pool.submit(self._fetch, record)
        families: dict[str, object] = {}
        metrics_up = {}
        for lr, future in pending.items():
            try:
                text = future.result(timeout=FETCH_TIMEOUT + 1)
                parsed = list(text_string_to_metric_families(text))
            except Exception:
                metrics_up[lr] = 0
                continue
            metrics_up[lr] = 1
            for family in parsed:
                merged = families.get(family.name)
                if merged is None:
                    families[family.name] = family
                elif merged.type == family.type:
                    merged.samples.extend(family.samples)
        yield from families.values()

        up = GaugeMetricFamily("npudist_rank_up", "1 while the rank's process runs, 0 once it ended or before it "
                               "started (npurun's view of its local ranks).", labels=list(LABELS))
        mup = GaugeMetricFamily("npudist_rank_metrics_up", "1 if the rank's own metrics were read in this scrape.",
                                labels=list(LABELS))
        exit_code = GaugeMetricFamily("npudist_rank_exit_code", "Exit code of a rank that ended (minus the signal "
                                      "number when a signal killed it); absent while it runs or when unknown.",
                                      labels=list(LABELS))
        for lr in sorted(envs):
            values = [envs[lr].get("RANK", ""), str(lr), self.host]
            up.add_metric(values, 1 if lr in running else 0)
            mup.add_metric(values, metrics_up.get(lr, 0))
            with self._lock:
                code = self.exit_codes.get((restart, lr))
            if code is not None and lr not in running:
                exit_code.add_metric(values, code)
        restarts = GaugeMetricFamily("npudist_npurun_restarts", "Restarts of the job's ranks so far "
                                     "(TORCHELASTIC_RESTART_COUNT of the current attempt).", labels=["host"])
        restarts.add_metric([self.host], int(restart) if restart.isdigit() else 0)
        yield from (up, mup, exit_code, restarts)

    @staticmethod
    def _announced_below(proc, records: dict[int, dict]) -> dict | None:
        # a rank started through a wrapper (--no-python script): the python process is a descendant
        if not records:
            return None
        try:
            for child in proc.children(recursive=True):
                if child.pid in records:
                    return records[child.pid]
        except Exception:
            pass
        return None

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)


class NodeMetrics:
    """The node endpoint's lifetime: directory, server, final state, linger, cleanup.

    Args:
        addr, port: where to serve (port 0: any free port; ``url`` tells which).
        rank_envs, host: see NodeCollector.
    """

    def __init__(self, addr: str, port: int, rank_envs: Callable[[], dict[int, dict[str, str]]], host: str):
        self.addr, self.requested_port = addr, port
        self.directory = tempfile.mkdtemp(prefix="npurun-metrics-")
        self.collector = NodeCollector(self.directory, rank_envs, host)
        self._httpd = None
        self.port: int | None = None

    @property
    def url(self) -> str:
        host = f"[{self.addr}]" if ":" in self.addr else self.addr
        return f"http://{host}:{self.port}/metrics"

    def start(self) -> NodeMetrics:
        """Starts serving (raises OSError naming the address when it cannot be bound)."""
        from prometheus_client import CollectorRegistry, start_http_server
        registry = CollectorRegistry(auto_describe=False)
        registry.register(self.collector)
        try:
            self._httpd, _ = start_http_server(self.requested_port, addr=self.addr, registry=registry)
        except OSError as e:
            self.close()
            raise OSError(e.errno, f"--metrics-addr {self.addr} --metrics-port {self.requested_port}: cannot serve "
                                   f"metrics there ({e.strerror or e}); choose another port (0 = any free port)") from None
        self.port = self._httpd.server_port
        print(f"npurun: metrics of this node's ranks at {self.url}", file=sys.stderr, flush=True)
        return self

    def rank_env(self) -> dict[str, str]:
        """What each rank needs to announce its endpoint."""
        from npudist.watchdog.metrics.announce import DIR_ENV
        return {DIR_ENV: self.directory}

    def finish(self, failures, rank_envs: dict[int, dict[str, str]], succeeded: bool) -> None:
        """Records how the ranks of the last attempt ended (from npurun's outcome)."""
        restart = next(iter(rank_envs.values()), {}).get("TORCHELASTIC_RESTART_COUNT", "0")
        for f in failures:
            self.collector.record_exit(restart, f.local_rank, f.exitcode)
        if succeeded:
            for lr in rank_envs:
                self.collector.record_exit(restart, lr, 0)

    def linger(self, seconds: float, interrupted: Callable[[], bool]) -> None:
        """Keeps serving ``seconds`` after the job (returns early once ``interrupted()``)."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline and not interrupted():
            time.sleep(0.1)

    def close(self) -> None:
        """Stops serving and removes the announcement directory (idempotent)."""
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None
        self.collector.close()
        shutil.rmtree(self.directory, ignore_errors=True)
