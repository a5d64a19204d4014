"""npurun end to end: the success path, devices, threads, prefixed output, logs, restarts."""
import os
import re

import pytest

from . import JOB, facts, run_npurun

pytestmark = pytest.mark.timeout(240)


def test_success_path_ranks_devices_threads_output_logs(tmp_path, shm_of):
    log_dir = tmp_path / "logs"
    r = run_npurun(["--nproc", "4", "--log-dir", str(log_dir), JOB, "ok"],
                   env={"NPUDIST_DEVICE_COUNT": "8", "ASCEND_RT_VISIBLE_DEVICES": "7,5,3,1,0"})
    assert r.returncode == 0, r.stdout + r.stderr
    f = facts(r.stdout)
    assert sorted(f) == [0, 1, 2, 3], r.stdout
    cores = len(os.sched_getaffinity(0))
    expected_threads = [max(1, cores // 4 + (1 if i < cores % 4 else 0)) for i in range(4)]
    tags = {f[i]["tag"] for i in f}
    assert len(tags) == 1 and re.fullmatch(r"[0-9a-f]{12}", tags.pop())
    for rank, v in f.items():
        assert v["local_rank"] == str(rank) and v["world"] == "4" and v["lws"] == "4"
        assert v["sum"] == "10"  # all_reduce of 1+2+3+4
        assert v["device"] == str(rank) and v["visible"] == "5"
        assert v["physical"] == ["7", "5", "3", "1"][rank]  # local rank i -> i-th visible npu
        assert v["threads"] == str(expected_threads[rank])
    # every line of every rank carries its prefix, stderr included
    for line in r.stdout.splitlines():
        assert re.match(r"^\[rank\d\]: ", line), line
    for rank in range(4):
        assert f"[rank{rank}]: stderr line of rank {rank}" in r.stderr
    assert "npurun: all 4 local ranks finished successfully" in r.stderr
    # per-rank log files under --log-dir
    outs = sorted(log_dir.glob("*/attempt_0/*/stdout.log"))
    errs = sorted(log_dir.glob("*/attempt_0/*/stderr.log"))
    assert len(outs) == 4 and len(errs) == 4
    assert "rank=2 " in (log_dir.glob("*/attempt_0/2/stdout.log").__next__()).read_text()
    assert str(log_dir) in r.stderr
    # the workers' /dev/shm files were removed by npurun after they exited
    assert shm_of(f[0]["tag"]) == []


def test_user_settings_win_and_ranks_filter(tmp_path):
    r = run_npurun(["--nproc-per-node", "2", "--local-ranks-filter", "1", "--redirects", "0:1", JOB, "ok"],
                   env={"OMP_NUM_THREADS": "3", "NPUDIST_JOB_TAG": "mytag01",
                        "TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE": "<${local_rank}> "})
    assert r.returncode == 0, r.stdout + r.stderr
    lines = [ln for ln in r.stdout.splitlines() if "=" in ln]
    assert len(lines) == 1 and lines[0].startswith("<1> rank=1 ")  # rank 0 filtered from the console
    assert "threads=3 " in lines[0] and "tag=mytag01 " in lines[0]
    assert "<1> stderr line of rank 1" in r.stderr and "stderr line of rank 0" not in r.stderr


def test_max_restarts_restarts_the_job(shm_of):
    r = run_npurun(["--nproc", "2", "--max-restarts", "1", JOB, "restart"])
    assert r.returncode == 0, r.stdout + r.stderr
    assert "npurun: restarting the job (attempt 2 of 2)" in r.stderr
    assert "restarts used 1 of 1" in r.stderr and "finished successfully" in r.stderr
    lines = [ln for ln in r.stdout.splitlines() if "attempt=1" in ln]
    assert len(lines) == 2, r.stdout
    # attempt 0's /dev/shm files were removed before attempt 1 started
    assert all(ln.endswith("stale=-") for ln in lines), lines
    assert shm_of(facts(r.stdout)[0]["tag"]) == []


def test_a_restarted_round_sees_a_fresh_store_and_connects_gloo():
    # torch 2.13 shares one TCPStore across rounds unless TORCH_DISABLE_SHARE_RDZV_TCP_STORE=1 (npurun's
    # default): the second round's Gloo group then read the dead round's addresses and hung
    r = run_npurun(["--nproc", "2", "--max-restarts", "1", JOB, "restart-store"])
    assert r.returncode == 0, r.stdout + r.stderr
    lines = [ln for ln in r.stdout.splitlines() if "attempt=1" in ln]
    assert len(lines) == 2 and all("gloo_sum=2 " in ln and ln.endswith("earlier_keys=-") for ln in lines), r.stdout
