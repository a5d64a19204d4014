"""Starts real rank processes for hccl tests (env:// rendezvous on a free port)."""
import json
import os
import socket
import subprocess
import tempfile
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
WORKERS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "workers")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Ranks:
    """The finished processes of one launch: returncodes, stdout, stderr and the
    JSON lines each rank printed after "RESULT "."""

    def __init__(self, procs, outs, elapsed):
        self.returncodes = [p.returncode for p in procs]
        self.stdout = [o for o, _ in outs]
        self.stderr = [e for _, e in outs]
        self.elapsed = elapsed

    def results(self, rank):
        return [json.loads(line[len("RESULT "):]) for line in self.stdout[rank].splitlines() if line.startswith("RESULT ")]

    def explain(self):
        parts = []
        for r, (rc, out, err) in enumerate(zip(self.returncodes, self.stdout, self.stderr)):
            parts.append(f"--- rank {r} exit {rc}\n{out[-3000:]}\n{err[-3000:]}")
        return "\n".join(parts)


def launch(script, nranks, args=(), env=None, timeout=240, hosts=None, start=True):
    """Runs tests/hccl/workers/<script> on `nranks` ranks and waits for all.

    hosts: optional list giving NPUDIST_HOSTNAME per rank (simulated hosts).
    """
    port = free_port()
    base = dict(os.environ)
    for key in list(base):
        if key.startswith(("NPUDIST_", "HCCL_", "TORCH_HCCL_", "ASCEND_")):
            base.pop(key)
    # These tests check what the survivors of a failure see and do next; the
    # watchdog's default (take the process down) is tested in tests/watchdog.
    base["TORCH_HCCL_ASYNC_ERROR_HANDLING"] = "0"
    base["TORCH_HCCL_DEBUG_INFO_TEMP_FILE"] = os.path.join(tempfile.mkdtemp(prefix="hccl-fr-"), "rank_")
    base.update(env or {})
    procs = []
    t0 = time.monotonic()
    for r in range(nranks):
        e = dict(base, RANK=str(r), WORLD_SIZE=str(nranks), LOCAL_RANK=str(r), MASTER_ADDR="127.0.0.1",
                 MASTER_PORT=str(port), PYTHONPATH=REPO + os.pathsep + base.get("PYTHONPATH", ""))
        if hosts:
            e["NPUDIST_HOSTNAME"] = hosts[r]
        procs.append(subprocess.Popen([sys.executable, os.path.join(WORKERS, script), *map(str, args)], env=e,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO))
    outs = []
    deadline = time.monotonic() + timeout
    for p in procs:
        try:
            outs.append(p.communicate(timeout=max(1, deadline - time.monotonic())))
        except subprocess.TimeoutExpired:
            for q in procs:
                q.kill()
            outs.append(p.communicate())
    return Ranks(procs, outs, time.monotonic() - t0)
