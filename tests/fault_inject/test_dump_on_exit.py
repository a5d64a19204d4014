"""Flight-recorder dumps are never lost (TORCH_HCCL_DUMP_ON_TIMEOUT=1): a 2-rank job under npurun
whose rank 1 skips a collective leaves every rank's dump and the log line naming it, on every
exit path: rank 0 ending by an uncaught exception in its main thread (the interpreter's exit
waits, bounded, for the dump the watchdog thread owes), rank 0 aborted by its watchdog, and
rank 1 stopped by npurun's SIGTERM while it sleeps (it answers the job-wide dump request
first, if its store poller has not yet). Run beside CPU burners: the failure case seen once on a loaded machine."""
import contextlib
import os
import subprocess
import sys

import pytest

from npudist.testing.npurun import run_npurun

WORKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "workers", "dump_on_exit.py")
TIMEOUT_S = 4


@contextlib.contextmanager
def cpu_burners(n=2):
    procs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]
    try:
        yield
    finally:
        for p in procs:
            p.kill()
            p.wait()


@pytest.mark.timeout(300)
@pytest.mark.parametrize("mode,rank0", [("0", "raise"), ("3", "catch")])
def test_every_rank_dumps_before_it_ends(tmp_path, mode, rank0):
    env = {"TORCH_HCCL_DUMP_ON_TIMEOUT": "1",
           "TORCH_HCCL_DEBUG_INFO_TEMP_FILE": str(tmp_path / "fr_rank_"), "TORCH_HCCL_ASYNC_ERROR_HANDLING": mode}
    with cpu_burners():
        r = run_npurun(["--nproc", "2", WORKER, TIMEOUT_S, rank0], env=env, timeout=240)
    text = r.stdout + r.stderr
    assert r.returncode != 0, text[-4000:]
    assert "rank 0: all_reduce #1 done" in text and "rank 0: all_reduce #2 done" not in text, text[-4000:]
    for rank in (0, 1):
        path = tmp_path / f"fr_rank_{rank}"
        assert path.exists() and path.stat().st_size > 0, f"no dump of rank {rank}\n{text[-4000:]}"
        assert f"[hccl watchdog] rank {rank}: flight recorder dumped to {path} (" in text, text[-4000:]
    if rank0 == "raise":  # the exception ended rank 0's main thread; the watchdog never ended the process
        assert "rank 0 failed first (exit code 1)" in text and "the process is being taken down" not in text, \
            text[-4000:]
    else:  # rank 0 caught the error and waited: its watchdog aborted it
        assert "rank 0 failed first (killed by SIGABRT)" in text, text[-4000:]
        assert "[hccl watchdog] rank 0: to avoid running on with inconsistent data, the process is being taken down" \
            in text, text[-4000:]
    # rank 1 never reached #2: npurun stopped it (SIGTERM) while it slept
    assert "rank 1: skipping all_reduce #2" in text and "rank 1: all_reduce #2 done" not in text, text[-4000:]
