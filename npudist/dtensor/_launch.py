"""Starts N real rank processes on this machine (env:// rendezvous on a free port).

Used by the DTensor sweep (npudist.dtensor.sweep) and by tests/dtensor. Each
rank runs ``python <script or -m module> args`` with RANK, WORLD_SIZE,
LOCAL_RANK, MASTER_ADDR, MASTER_PORT set; its stdout/stderr are captured.
"""
from __future__ import annotations

import os
import socket
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Finished:
    """returncodes, stdout, stderr of every rank and the wall time in seconds."""

    def __init__(self, returncodes, outs, elapsed, timed_out):
        self.returncodes = returncodes
        self.stdout = [o for o, _ in outs]
        self.stderr = [e for _, e in outs]
        self.elapsed = elapsed
        self.timed_out = timed_out

    def ok(self) -> bool:
        return not self.timed_out and all(rc == 0 for rc in self.returncodes)

    def explain(self, tail=4000) -> str:
        parts = [f"timed out: {self.timed_out}"]
        for r, (rc, out, err) in enumerate(zip(self.returncodes, self.stdout, self.stderr)):
            parts.append(f"--- rank {r} exit {rc}\n{out[-tail:]}\n{err[-tail:]}")
        return "\n".join(parts)


def launch(argv, nranks, env=None, timeout=600.0) -> Finished:
    """Runs ``[sys.executable, *argv]`` on `nranks` ranks and waits for all (kills all after `timeout` s)."""
    port = free_port()
    base = dict(os.environ)
    for key in list(base):
        if key.startswith(("NPUDIST_DEVICE", "ASCEND_")):
            base.pop(key)
    base.update(env or {})
    base["PYTHONPATH"] = REPO + os.pathsep + base.get("PYTHONPATH", "")
    t0 = time.monotonic()
    procs = []
    for r in range(nranks):
        e = dict(base, RANK=str(r), WORLD_SIZE=str(nranks), LOCAL_RANK=str(r), LOCAL_WORLD_SIZE=str(nranks),
                 MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), OMP_NUM_THREADS="1")
        procs.append(subprocess.Popen([sys.executable, *map(str, argv)], env=e, stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, text=True, cwd=REPO))
    outs, timed_out = [], False
    deadline = time.monotonic() + timeout
    for p in procs:
        try:
            outs.append(p.communicate(timeout=max(1.0, deadline - time.monotonic())))
        except subprocess.TimeoutExpired:
            timed_out = True
            for q in procs:
                q.kill()
            outs.append(p.communicate())
    return Finished([p.returncode for p in procs], outs, time.monotonic() - t0, timed_out)
