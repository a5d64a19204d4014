"""Signals and cleanup: nothing of a job outlives npurun.

- npurun makes itself a child subreaper (Linux ``PR_SET_CHILD_SUBREAPER``): a process a
  rank started is re-parented to npurun, not to init, when that rank dies, so it can be
  found and stopped.
- ``stop_descendants`` sends SIGTERM to every remaining descendant, waits a grace period,
  then SIGKILLs and reaps them. torch's agent already stops each worker's process group
  (workers run in their own session); this catches what escaped it (children of a rank
  killed with -9, daemonised helpers).
- ``remove_shm`` deletes ``/dev/shm/npudist-<tag>-*`` once the ranks are gone (long tags are
  shortened as the engine names them: npudist/_shm_names.py).
- SIGINT and SIGTERM to npurun reach the ranks as SIGTERM, with ``--shutdown-timeout``
  seconds before SIGKILL; a second signal kills at once. This holds also while torch's
  agent is blocked in a C++ store call (where Python runs no signal handler): a thread
  sees the signal through ``signal.set_wakeup_fd`` and, if the main thread has not
  handled it within ``BLOCKED_AFTER`` s, ends npurun itself (``SignalState.on_blocked``).
"""
from __future__ import annotations

import ctypes
import glob
import os
import shutil
import signal
import socket
import threading
import time
from collections.abc import Callable

from torch.distributed.elastic.multiprocessing import SignalException

from npudist import _shm_names

SHM_DIR = "/dev/shm"
BLOCKED_AFTER = 1.0  # seconds the main thread may take to run the Python signal handler
_PR_SET_CHILD_SUBREAPER = 36


def become_subreaper() -> bool:
    """Makes orphaned descendants re-parent to this process. Returns False where unsupported."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def _parents() -> dict[int, int]:
    """pid -> parent pid for every process in /proc (live or zombie)."""
    result = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat[stat.rfind(b")") + 2:].split()
        result[int(name)] = int(fields[1])
    return result


def descendants(pid: int | None = None) -> list[int]:
    """Pids of every descendant of ``pid`` (default: this process), children first."""
    root = os.getpid() if pid is None else pid
    children: dict[int, list[int]] = {}
    for child, parent in _parents().items():
        children.setdefault(parent, []).append(child)
    out, todo = [], [root]
    while todo:
        for child in children.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except OSError:
        return False
    return stat[stat.rfind(b")") + 2:stat.rfind(b")") + 3] != b"Z"


def _reap(pids: list[int]) -> None:
    for pid in pids:
        try:
            os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            pass  # not our child (its own parent reaps it) or already reaped


def _signal(pids: list[int], sig: int) -> None:
    for pid in pids:
        try:
            os.kill(pid, sig)
        except (ProcessLookupError, PermissionError):
            pass


def stop_descendants(grace: float) -> list[int]:
    """SIGTERM every descendant, wait up to ``grace`` s, SIGKILL the rest; reap adopted ones.

    Returns the pids that were still running when called (empty when nothing was left).
    """
    pids = [p for p in descendants() if _alive(p)]
    if not pids:
        _reap(descendants())
        return []
    _signal(pids, signal.SIGTERM if grace > 0 else signal.SIGKILL)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        _reap(pids)
        if not any(_alive(p) for p in pids):
            break
        time.sleep(0.05)
    # anything started meanwhile (a rank forking during the grace period) is included
    rest = [p for p in set(pids) | set(descendants()) if _alive(p)]
    _signal(rest, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while rest and time.monotonic() < deadline:
        _reap(rest)
        rest = [p for p in rest if _alive(p)]
        time.sleep(0.02)
    _reap(descendants())
    return pids


def shm_entries(tag: str) -> list[str]:
    """The job's entries in /dev/shm: ``npudist-<component>-*``, the component of ``tag`` by the
    engine's naming rule (npudist/_shm_names.py: long tags are shortened with a hash)."""
    return glob.glob(os.path.join(SHM_DIR, glob.escape(_shm_names.job_prefix(tag)) + "*"))


def remove_shm(tag: str) -> list[str]:
    """Deletes the job's /dev/shm entries; returns the names it removed."""
    removed = []
    for path in shm_entries(tag):
        try:
            os.unlink(path)
            removed.append(os.path.basename(path))
        except FileNotFoundError:
            pass
        except IsADirectoryError:
            shutil.rmtree(path, ignore_errors=True)
            removed.append(os.path.basename(path))
    return removed


class SignalState:
    """SIGINT and SIGTERM handling of the launcher process (npurun keeps both from torch's agent).

    The first SIGINT or SIGTERM raises the ``SignalException`` torch's agent handles, with
    SIGTERM as the signal: the agent sends the ranks SIGTERM and SIGKILLs what is left after
    the grace period (``--shutdown-timeout``). A second signal during the grace period
    SIGKILLs every process of the job at once.

    Python runs signal handlers in the main thread only, between bytecodes; while the agent
    waits in a C++ call (a store operation) nothing would happen. A watcher thread reads
    the signal numbers from ``signal.set_wakeup_fd``; when the main thread has not run the
    handler ``BLOCKED_AFTER`` s after a SIGINT/SIGTERM, it calls ``on_blocked(signum)``
    (in a new thread, once), which ends npurun; a further signal then kills at once.
    """

    def __init__(self, on_blocked: Callable[[int], None] | None = None):
        self.received: list[int] = []
        self.on_blocked = on_blocked
        self.taken_over = False  # on_blocked runs: the main thread must not act on signals any more
        self._seen = 0
        self._quiet = False
        self._wake: tuple[socket.socket, socket.socket] | None = None

    def _handler(self, signum, frame):
        self.received.append(signum)
        if self.taken_over:
            return
        if len(self.received) == 1:
            raise SignalException(f"npurun (pid {os.getpid()}) got {signal.Signals(signum).name}",
                                  sigval=signal.SIGTERM)
        stop_descendants(grace=0)

    def install(self) -> None:
        """Installs the SIGINT and SIGTERM handlers (torch's agent must not be given these two)
        and, with ``on_blocked``, the watcher thread."""
        signal.signal(signal.SIGINT, self._handler)
        signal.signal(signal.SIGTERM, self._handler)
        if self.on_blocked is None or self._wake is not None:
            return
        r, w = socket.socketpair()
        r.setblocking(True)
        w.setblocking(False)
        try:
            signal.set_wakeup_fd(w.fileno(), warn_on_full_buffer=False)
        except ValueError:  # not the main thread
            r.close()
            w.close()
            return
        self._wake = (r, w)
        threading.Thread(target=self._watch, name="npurun-signals", daemon=True).start()

    def _watch(self) -> None:
        r = self._wake[0]
        while True:
            try:
                data = r.recv(64)
            except OSError:
                return
            if not data:
                return
            for signum in data:
                if signum not in (signal.SIGINT, signal.SIGTERM):
                    continue
                self._seen += 1
                if self.taken_over:  # a further signal while npurun ends itself: no more grace
                    stop_descendants(grace=0)
                    continue
                if self._quiet:
                    continue
                deadline = time.monotonic() + BLOCKED_AFTER
                while time.monotonic() < deadline and len(self.received) < self._seen:
                    time.sleep(0.02)
                if len(self.received) < self._seen and not self._quiet and not self.taken_over:
                    self.taken_over = True
                    threading.Thread(target=self.on_blocked, args=(signum,), name="npurun-signal-exit",
                                     daemon=True).start()

    def quiet(self) -> None:
        """After the run: record further SIGINT/SIGTERM instead of raising, so cleanup completes."""
        self._quiet = True

        def record(signum, frame):
            self.received.append(signum)
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, record)

    @property
    def interrupted(self) -> int | None:
        """The first SIGINT/SIGTERM npurun received, or None."""
        return self.received[0] if self.received else None
