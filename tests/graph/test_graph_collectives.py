"""2 ranks: collectives captured in a graph replay in order on every rank,
with new sequence numbers, interleaved with eager collectives."""
import json
import os
import socket
import subprocess
import sys

import pytest

pytestmark = pytest.mark.timeout(400)

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _launch(script, n, timeout=300):
    # Minimal launcher (to be replaced by npudist.testing's shared harness once it lands).
    port = _free_port()
    procs = []
    for r in range(n):
        env = dict(os.environ, RANK=str(r), WORLD_SIZE=str(n), LOCAL_RANK=str(r), MASTER_ADDR="127.0.0.1",
                   MASTER_PORT=str(port), TORCH_HCCL_ASYNC_ERROR_HANDLING="0",
                   PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""))
        procs.append(subprocess.Popen([sys.executable, os.path.join(HERE, "workers", script)], env=env,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO))
    outs = []
    for p in procs:
        try:
            outs.append(p.communicate(timeout=timeout))
        except subprocess.TimeoutExpired:
            for q in procs:
                q.kill()
            outs.append(p.communicate())
    return procs, outs


def test_two_rank_collectives_in_graph():
    procs, outs = _launch("collectives.py", 2)
    explain = "\n".join(f"--- rank {r} rc={p.returncode}\n{o[-2000:]}\n{e[-3000:]}" for r, (p, (o, e)) in
                        enumerate(zip(procs, outs)))
    assert all(p.returncode == 0 for p in procs), explain
    for out, _ in outs:
        res = [json.loads(line[7:]) for line in out.splitlines() if line.startswith("RESULT ")][0]
        assert res["seq_after_capture"] == 0, res  # capture leaves no in-flight work
        assert res["captured_untouched"], res
        assert res["replays_ok"] == [True, True, True], res
        # Each iteration: one eager all_reduce + three replayed collectives, each numbered anew.
        assert res["seq_steps"] == [4, 4], res
