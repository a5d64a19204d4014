"""The hccl watchdog under real faults (3 real rank processes each).

Each case checks what the surviving ranks say (the error and the watchdog's
log), how they end (TORCH_HCCL_ASYNC_ERROR_HANDLING), the counters, and that
PyTorch's own analyzer (torchfrtrace) reads the flight-recorder dumps and
names the culprit. Bounds are generous (group timeout + 30 s or more).
"""
import datetime
import os
import pickle
import signal
import threading
import time

import pytest
import torch
import torch.distributed as dist

import npudist
import npudist.watchdog
from npudist.testing import rank as rank_setup
from npudist.testing.checks import report
from npudist.testing.multiproc import launch, run_on_ranks

SIGABRT = -signal.SIGABRT


def faults_on_rank(scenario):
    """Faults the watchdog must report: ``scenario`` selects what happens (3 ranks).

    never_joins      rank 2 never joins all_reduce #2 (injected: the test sets
                     NPUDIST_FAULT_INJECT=rank=2,collective=2,kind=hang); the others time out (3 s).
    killed           rank 2 is SIGKILLed while it waits inside all_reduce #2.
    wrong_collective rank 1 calls broadcast where the others call all_reduce (#2).
    wrong_size       rank 1 passes 16 elements where the others pass 8 (#2).
    slow             rank 1 arrives 100 ms late at each of 25 all_reduces (injected:
                     rank=1,kind=slow,delay_ms=100).
    exec_timeout     as never_joins, with HCCL_EXEC_TIMEOUT=2 under a 60 s group timeout.
    never_joins_2hosts as never_joins, with rank 2 on another (simulated) host.
    stalled_watchdog (2 ranks) rank 0, which serves the store, stops (SIGSTOP) for 15 s:
                     rank 1's all_reduce times out, its watchdog blocks asking the other
                     ranks (through the store) to dump, and the heartbeat monitor
                     (TORCH_HCCL_HEARTBEAT_TIMEOUT_SEC=3) ends rank 1.

    At the end of "slow" rank 0 dumps its flight recorder on SIGUSR1 and the others
    through npudist.watchdog.dump_flight_recorder().

    Each rank reports what it saw; ranks that the watchdog takes down report first."""
    RANK = rank_setup.rank()
    group_timeout = 60 if scenario in ("exec_timeout", "killed") else 3
    rank_setup.init("hccl", timeout=datetime.timedelta(seconds=group_timeout))
    x = torch.ones(8, device="npu")
    dist.all_reduce(x)  # #1: the group works
    torch.npu.synchronize()
    t0 = time.monotonic()
    err = None
    try:
        if scenario in ("never_joins", "exec_timeout", "never_joins_2hosts"):
            dist.all_reduce(x)  # rank 2 never joins it (NPUDIST_FAULT_INJECT)
        elif scenario == "killed":
            # Large enough to take several protocol steps: rank 2 dies between two.
            big = torch.ones(4 << 20, device="npu")
            if RANK == 2:
                threading.Timer(0.5, lambda: os.kill(os.getpid(), signal.SIGKILL)).start()
            else:
                time.sleep(1.0)
            dist.all_reduce(big)
        elif scenario == "wrong_collective":
            if RANK == 1:
                dist.broadcast(x, src=0)
            else:
                dist.all_reduce(x)
        elif scenario == "wrong_size":
            dist.all_reduce(torch.ones(16 if RANK == 1 else 8, device="npu"))
        elif scenario == "slow":
            for _ in range(25):
                dist.all_reduce(x)  # rank 1 starts each 100 ms late (NPUDIST_FAULT_INJECT)
            time.sleep(1.5)  # let a straggler log line go out
            if RANK == 0:
                os.kill(os.getpid(), signal.SIGUSR1)
                time.sleep(0.5)  # the watchdog writes it within its 100 ms round
            else:
                npudist.watchdog.dump_flight_recorder()
        elif scenario == "stalled_watchdog":
            if RANK == 0:
                import subprocess
                subprocess.Popen(["sh", "-c", f"sleep 15; kill -CONT {os.getpid()}"])
                os.kill(os.getpid(), signal.SIGSTOP)
                os._exit(0)
            dist.all_reduce(x)
        torch.npu.synchronize()
    except Exception as e:  # noqa: BLE001 - the error text is the result
        err = f"{type(e).__name__}: {e}"
    stats = npudist._C._hccl_stats()["groups"][0]
    report(rank=RANK, error=err, elapsed=time.monotonic() - t0, timeouts=stats["timeouts"],
           mismatches=stats["mismatches"], straggler=stats["straggler_score_s"],
           failed=sum(o["failed"] for o in stats["ops"].values()))
    breaking = scenario in ("never_joins", "killed", "exec_timeout", "never_joins_2hosts", "stalled_watchdog")
    if err and breaking and os.environ.get("TORCH_HCCL_ASYNC_ERROR_HANDLING", "3") in ("1", "3"):
        time.sleep(30)  # the watchdog takes the process down before this ends
        report(rank=RANK, survived=True)
        os._exit(0)
    if scenario in ("wrong_collective", "wrong_size"):
        # A mismatch leaves the group usable.
        y = torch.ones(4, device="npu")
        dist.all_reduce(y)
        torch.npu.synchronize()
        report(rank=RANK, after=float(y[0]))
    time.sleep(1.5)  # dumps requested by other ranks are written within a second
    os._exit(0)



# Faults injected through the runtime (docs/fault_injection.md) instead of sleeps in the worker.
INJECT = {"never_joins": "rank=2,collective=2,kind=hang", "never_joins_2hosts": "rank=2,collective=2,kind=hang",
          "exec_timeout": "rank=2,collective=2,kind=hang", "slow": "rank=1,kind=slow,delay_ms=100"}


def run(scenario, tmp_path, world=3, hosts=None, **env):
    if scenario in INJECT:
        env["NPUDIST_FAULT_INJECT"] = INJECT[scenario]
    env = {"TORCH_HCCL_DEBUG_INFO_TEMP_FILE": str(tmp_path / "fr_rank_"), "TORCH_HCCL_ASYNC_ERROR_HANDLING": "3",
           **{k: str(v) for k, v in env.items()}}
    r = run_on_ranks(faults_on_rank, world, scenario, backend=None, env=env, timeout=150, hosts=hosts)
    return r


def analyze(tmp_path):
    """torchfrtrace's report (it logs to stderr) on the dumps in tmp_path."""
    # one process forked from the harness's zygote: torch's own tool, without a fresh import of torch
    r = launch(["-m", "torch.distributed.flight_recorder.fr_trace", str(tmp_path), "-p", "fr_rank_",
                "--allow-incomplete-ranks"], 1, timeout=120)
    assert r.returncodes == [0], r.explain()
    return r.stderr[0]


def first(r, rank):
    return r.results(rank)[0]


@pytest.mark.timeout(200)
@pytest.mark.parametrize("mode", ["3", pytest.param("2", marks=pytest.mark.slow)])
def test_rank_never_joins(tmp_path, mode):
    r = run("never_joins", tmp_path, TORCH_HCCL_ASYNC_ERROR_HANDLING=mode)
    for rank in (0, 1):
        res = first(r, rank)
        err = res["error"]
        assert "collective timeout in process group '0' (default_pg)" in err, r.explain()
        assert "all_reduce collective_seq_id=2" in err and "inputs [Float[8]]" in err, err
        assert "Ranks that never joined #2: [2]" in err and "What to do" in err, err
        assert res["timeouts"] == 1 and res["failed"] == 1, res
        assert "[hccl watchdog] rank %d: collective failed (timeout)" % rank in r.stderr[rank], r.explain()
    # The late rank fails at once, naming the first failure.
    assert "unusable after an earlier failure" in first(r, 2)["error"]
    assert "[npudist fault] rank 2: this rank never joined its collective #2" in r.stderr[2], r.explain()
    if mode == "3":  # SkipCleanUp: the watchdog takes every failed rank down
        assert r.returncodes == [SIGABRT] * 3, r.explain()
        assert "the process is being taken down" in r.stderr[0]
        assert all(len(r.results(k)) == 1 for k in range(3))  # none survived its sleep
    else:  # CleanUpOnly: processes live on
        assert r.returncodes == [0, 0, 0], r.explain()
    assert sorted(os.listdir(tmp_path)) == ["fr_rank_0", "fr_rank_1", "fr_rank_2"]
    report = analyze(tmp_path)
    assert "Not all ranks joining collective, sequence number: 2" in report and "missing ranks: {2}" in report, report


@pytest.mark.timeout(200)
def test_rank_on_another_host_never_joins(tmp_path):
    """Across hosts the report comes through the store; with the desync report."""
    r = run("never_joins_2hosts", tmp_path, hosts=["a", "a", "b"], TORCH_HCCL_DESYNC_DEBUG=1)
    err = first(r, 0)["error"]
    assert "collective timeout in process group '0'" in err and "Ranks that never joined #2: [2]" in err, r.explain()
    assert "Desync report (TORCH_HCCL_DESYNC_DEBUG=1)" in err and "finished #1 but never joined #2: [2]" in err, err
    assert "rank 2: last started #1 (all_reduce), last completed #1" in err, err
    report = analyze(tmp_path)
    assert "missing ranks: {2}" in report, report


@pytest.mark.timeout(200)
def test_rank_killed_mid_collective(tmp_path):
    r = run("killed", tmp_path)
    assert r.returncodes[2] == -signal.SIGKILL
    for rank in (0, 1):
        err = first(r, rank)["error"]
        assert "rank(s) [2] exited while this collective was in progress" in err, r.explain()
        assert r.returncodes[rank] == SIGABRT, r.explain()
    assert sorted(os.listdir(tmp_path)) == ["fr_rank_0", "fr_rank_1"]
    report = analyze(tmp_path)
    assert "missed FR dumps from ranks ({2})" in report, report


@pytest.mark.timeout(200)
@pytest.mark.parametrize("scenario,kind", [("wrong_collective", "COLLECTIVE_TYPE_MISMATCH"),
                                           pytest.param("wrong_size", "SIZE_OR_SYNTAX_MISMATCH",
                                                        marks=pytest.mark.slow)])
def test_mismatch(tmp_path, scenario, kind):
    r = run(scenario, tmp_path)
    assert r.returncodes == [0, 0, 0], r.explain()  # a mismatch does not break the group
    for rank in range(3):
        res = first(r, rank)
        assert "ranks disagree before any data moved: rank 1 has" in res["error"], r.explain()
        assert res["mismatches"] == 1 and res["failed"] == 1, res
        assert r.results(rank)[1]["after"] == 3.0  # the group still works
    assert sorted(os.listdir(tmp_path)) == ["fr_rank_0", "fr_rank_1", "fr_rank_2"]
    report = analyze(tmp_path)
    assert "Culprit rank 1" in report and kind in report, report


@pytest.mark.timeout(200)
def test_slow_rank_and_dumps_on_demand(tmp_path):
    r = run("slow", tmp_path, NPUDIST_HCCL_STRAGGLER_LOG_SEC=1, NPUDIST_HCCL_TRACE_FRAMES=1)
    assert r.returncodes == [0, 0, 0], r.explain()
    scores = [first(r, k)["straggler"] for k in range(3)]
    assert scores[1] > 0.02 and scores[1] > 10 * max(scores[0], scores[2]), scores
    assert "slowest rank 1 keeps the others waiting" in r.stderr[0], r.explain()
    assert "flight recorder dumped to" in r.stderr[0] and "(signal)" in r.stderr[0], r.explain()
    assert sorted(os.listdir(tmp_path)) == ["fr_rank_0", "fr_rank_1", "fr_rank_2"]
    report = analyze(tmp_path)
    assert "Culprit" not in report and "missing ranks" not in report, report
    with open(tmp_path / "fr_rank_1", "rb") as f:
        entries = pickle.load(f)["entries"]
    assert len(entries) == 26 and all(e["state"] == "completed" for e in entries), entries[-1]
    frames = entries[-1]["frames"]  # NPUDIST_HCCL_TRACE_FRAMES=1: the Python caller is recorded
    assert any(fr["filename"].endswith("test_faults.py") and fr["name"] == "faults_on_rank" for fr in frames), frames


@pytest.mark.slow
@pytest.mark.timeout(200)
def test_exec_timeout_fires_before_the_group_timeout(tmp_path):
    r = run("exec_timeout", tmp_path, HCCL_EXEC_TIMEOUT=2)
    for rank in (0, 1):
        res = first(r, rank)
        assert "limit: HCCL_EXEC_TIMEOUT, 2 s" in res["error"], r.explain()
        assert res["elapsed"] < 20, res  # the 60 s group timeout never came into play
    assert r.returncodes[:2] == [SIGABRT, SIGABRT]


@pytest.mark.slow
@pytest.mark.timeout(200)
def test_heartbeat_monitor_ends_a_stalled_watchdog(tmp_path):
    r = run("stalled_watchdog", tmp_path, world=2, TORCH_HCCL_HEARTBEAT_TIMEOUT_SEC=3)
    assert r.returncodes[1] == SIGABRT, r.explain()
    assert "the watchdog thread has not gone round its loop" in r.stderr[1], r.explain()
    assert "collective timeout" in first(r, 1)["error"]
    assert len(r.results(1)) == 1  # ended during its 30 s sleep
