"""npurun when ranks fail, are killed, or npurun is signalled: others stopped, exit codes,
summary, no surviving process, nothing left in /dev/shm."""
import os
import signal
import time

import psutil
import pytest

from . import JOB, Running, facts

pytestmark = pytest.mark.timeout(240)


def _gone(pids, timeout=15):
    """True once none of ``pids`` runs (zombies count as gone only when reaped by someone)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        alive = [p for p in pids if psutil.pid_exists(p) and psutil.Process(p).status() != psutil.STATUS_ZOMBIE]
        if not alive:
            return True
        time.sleep(0.1)
    return False


def test_rank_raises_others_stopped_summary_no_orphans(tmp_path, shm_of):
    job = Running(["--nproc", "3", "--log-dir", str(tmp_path), JOB, "raise"])
    job.wait_for(r"ready=1", count=3)
    code, out, err = job.finish()
    f = facts(out)
    assert code == 1, err  # the failing rank's exit code
    assert "npurun: job FAILED" in err and "rank 1 failed first (exit code 1)" in err
    assert "first error: ValueError: boom from rank 1" in err
    for rank in (0, 2):
        assert f"rank {rank} (local rank {rank}, pid {f[rank]['pid']}): stopped by npurun after rank 1 failed" in err
    assert f"logs: {tmp_path}" in err
    # rank 0's child in its own session escaped torch's process-group kill; npurun's sweep stopped it
    pids = [int(f[r]["pid"]) for r in range(3)] + [int(f[0]["orphan"])]
    assert _gone(pids)
    assert shm_of(f[0]["tag"]) == []
    assert "[rank1]: ValueError: boom from rank 1" in err  # the traceback itself, prefixed


def test_kill9_of_a_rank_no_orphans_no_shm(shm_of):
    job = Running(["--nproc", "2", JOB, "wait"])
    ready = job.wait_for(r"rank=(\d) pid=(\d+) tag=(\w+) orphan=(\d+) ready=1", count=2)
    pids = {int(m.group(1)): (int(m.group(2)), int(m.group(4))) for m in ready}
    tag = ready[0].group(3)
    assert f"npudist-{tag}-r1" in shm_of(tag), "the worker's shm file exists while it runs"
    os.kill(pids[1][0], signal.SIGKILL)
    code, out, err = job.finish()
    assert code == 128 + signal.SIGKILL, err
    assert "rank 1 failed first (killed by SIGKILL)" in err
    assert "stopped by npurun after rank 1 failed" in err
    all_pids = [p for pair in pids.values() for p in pair]
    assert _gone(all_pids), [p for p in all_pids if psutil.pid_exists(p)]
    assert "leftover process(es)" in err
    assert shm_of(tag) == []


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_signal_to_npurun_reaches_ranks_as_sigterm_with_grace(tmp_path, sig):
    job = Running(["--nproc", "2", JOB, "sigterm", str(tmp_path)])
    ready = job.wait_for(r"rank=(\d) pid=(\d+) ready=1", count=2)
    job.proc.send_signal(sig)
    code, out, err = job.finish()
    assert code == 128 + sig, err
    assert f"npurun: interrupted by {signal.Signals(sig).name}" in err
    # every rank got SIGTERM (also for SIGINT) and had time to finish its 1 s "checkpoint"
    for rank in range(2):
        assert (tmp_path / f"ckpt{rank}").read_text() == "SIGTERM"
        assert f"[rank{rank}]: rank={rank} got=SIGTERM" in out
    assert "got_sigint" not in out
    assert _gone([int(m.group(2)) for m in ready])


@pytest.mark.slow
def test_rank_ignoring_sigterm_is_killed_after_the_grace_period(tmp_path):
    job = Running(["--nproc", "2", "--shutdown-timeout", "3", JOB, "sigterm", str(tmp_path), "1"])
    ready = job.wait_for(r"rank=(\d) pid=(\d+) ready=1", count=2)
    start = time.monotonic()
    job.proc.send_signal(signal.SIGTERM)
    code, out, err = job.finish()
    assert code == 128 + signal.SIGTERM
    assert "[rank1]: rank=1 ignored=SIGTERM" in out
    assert (tmp_path / "ckpt0").read_text() == "SIGTERM" and not (tmp_path / "ckpt1").exists()
    assert time.monotonic() - start >= 3  # rank 1 lived through the grace period, then SIGKILL
    assert _gone([int(m.group(2)) for m in ready])


@pytest.mark.slow
def test_second_signal_skips_the_grace_period(tmp_path):
    job = Running(["--nproc", "2", "--shutdown-timeout", "60", JOB, "sigterm", str(tmp_path), "1"])
    ready = job.wait_for(r"rank=(\d) pid=(\d+) ready=1", count=2)
    job.proc.send_signal(signal.SIGINT)
    job.wait_for(r"ignored=SIGTERM")
    job.proc.send_signal(signal.SIGINT)
    code, out, err = job.finish(timeout=40)  # far below the 60 s grace
    assert code == 128 + signal.SIGINT
    assert _gone([int(m.group(2)) for m in ready])


@pytest.mark.slow
@pytest.mark.parametrize("nproc,exitcode", [(2, 7), (4, 3), (4, 255)])
def test_exit_code_of_the_failing_rank_is_npuruns(nproc, exitcode):
    job = Running(["--nproc", str(nproc), JOB, "exit", str(exitcode)])
    code, out, err = job.finish()
    assert code == exitcode, err
    assert f"rank 1 failed first (exit code {exitcode})" in err
    assert err.count("stopped by npurun after rank 1 failed") == nproc - 1


@pytest.mark.slow
@pytest.mark.parametrize("victim", [0, 3])
def test_kill9_matrix(victim, shm_of):
    job = Running(["--nproc", "4", JOB, "wait"])
    ready = job.wait_for(r"rank=(\d) pid=(\d+) tag=(\w+) orphan=(\d+) ready=1", count=4)
    pids = {int(m.group(1)): (int(m.group(2)), int(m.group(4))) for m in ready}
    os.kill(pids[victim][0], signal.SIGKILL)
    code, out, err = job.finish()
    assert code == 128 + signal.SIGKILL
    assert f"rank {victim} failed first (killed by SIGKILL)" in err
    assert _gone([p for pair in pids.values() for p in pair])
    assert shm_of(ready[0].group(3)) == []
