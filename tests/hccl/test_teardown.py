"""Clean process lifecycle: every thread npudist starts (stream workers,
the hccl groups' progress threads among them; the watchdog, its store poller and heartbeat
monitor) is joined or safely detached on destroy_process_group, at interpreter exit with groups
alive or collectives in flight, in a forked child and when the store host is gone.
docs/lifecycle.md describes the rules."""
import json
import os
import subprocess
import sys
import uuid

import pytest

from npudist import _shm_names
from npudist.testing import multiproc

from . import WORKERS, launch, teardown_soak


def _spawn(reps, mode, tmp_path, world=2, timeout=600):
    tag = "td" + uuid.uuid4().hex[:10]
    p = subprocess.run([sys.executable, os.path.join(WORKERS, "teardown_spawn.py"), str(reps), str(tmp_path), mode,
                        str(world)],
                       env=multiproc.clean_env({"NPUDIST_JOB_TAG": tag, "OMP_NUM_THREADS": "1"}), cwd=multiproc.REPO,
                       capture_output=True, text=True, timeout=timeout)
    results = multiproc.parse_results(p.stdout)
    leaked = [n for n in os.listdir("/dev/shm") if n.startswith(_shm_names.job_prefix(tag))]
    return p, results, leaked


@pytest.mark.timeout(600)
@pytest.mark.parametrize("reps", [2, pytest.param(10, marks=pytest.mark.slow)])  # 10 in the full tier
def test_spawn_script_repeated(tmp_path, reps):
    """A user's teardown script (DeviceMesh on npu, distribute_tensor, a gloo group, fully_shard, a
    backward, destroy_process_group; ranks from start_processes(start_method="spawn")), run
    twice (10 times in the full tier; each run costs seconds, and test_teardown_soak_200_jobs
    repeats it further): every rank exits 0, destroy_process_group leaves no hccl thread, the
    exit-time shutdown no npudist thread, and nothing stays in /dev/shm."""
    p, results, leaked = _spawn(reps, "destroy", tmp_path)
    out = p.stdout[-4000:] + p.stderr[-4000:]
    assert p.returncode == 0 and len(results) == reps, out
    for res in results:
        assert res["exitcodes"] == [0, 0] and res["error"] is None, (res, out)
        for rank in res["ranks"]:
            assert not [n for n in rank["after_destroy"] if n.startswith("hccl-")], rank
            assert rank["after_shutdown"] == [], rank
    assert "terminate called" not in p.stderr, out
    assert leaked == []


@pytest.mark.timeout(300)
def test_exit_with_live_groups_and_collectives_in_flight(tmp_path):
    """No destroy_process_group, four async all_reduces still queued when the script returns:
    the exit-time shutdown completes them and joins every thread; the ranks exit 0."""
    p, results, leaked = _spawn(1, "inflight", tmp_path)
    out = p.stdout[-4000:] + p.stderr[-4000:]
    assert p.returncode == 0 and results and results[0]["exitcodes"] == [0, 0], out
    assert all(r["queued"] == 4 for r in results[0]["ranks"])
    assert "terminate called" not in p.stderr and leaked == [], out


@pytest.mark.timeout(120)
def test_forked_child_does_not_join_the_parents_threads():
    """A child forked while hccl groups and stream workers run exits through the same atexit
    shutdown: it must neither hang joining threads that exist only in the parent nor abort; the
    parent's group keeps working."""
    r = launch("teardown_fork.py", 1, timeout=100)
    assert r.returncodes == [0], r.explain()
    res = r.results(0)[-1]
    assert res["child_exit"] == 0 and res["child_seconds"] < 20, res
    assert res["after_fork_sum"] == 1.0 and res["threads_in_child"] == [], res


@pytest.mark.timeout(150)
def test_store_host_gone_does_not_hang_exit():
    """Rank 0 (the TCPStore's host) leaves first; rank 1 then exits with its groups alive: its
    watchdog's store poller fails or is detached, and the shutdown takes seconds, not the
    store's timeout."""
    r = launch("teardown_store_gone.py", 2, timeout=130)
    assert r.returncodes == [0, 0], r.explain()
    res = r.results(1)[-1]
    assert res["shutdown_seconds"] < 10, res
    assert res["after_shutdown"] == [], res


@pytest.mark.slow
@pytest.mark.timeout(7200)
def test_teardown_soak_200_jobs():
    """200 short jobs (spawn and npurun; with and without destroy_process_group; collectives in
    flight at exit; a gloo sub-group; DeviceMesh + FSDP2; an exception in one rank): 0 abnormal
    exits, 0 leaked /dev/shm entries, 0 orphans."""
    s = teardown_soak.soak(200, seed=25)
    assert s["failures"] == [], json.dumps(s["failures"], indent=1)[:20000]
    assert s["abnormal"] == s["leaked_shm"] == s["orphans"] == 0
