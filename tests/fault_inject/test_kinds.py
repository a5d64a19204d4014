"""Each fault kind on real ranks (2-3 processes, short timeouts): the fault fires where the
spec says, and the runtime reacts as to the real fault (errors, watchdog, counters, npurun)."""
import os
import signal

import pytest

from npudist.testing.multiproc import launch
from npudist.testing.npurun import run_npurun

WORKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "workers", "kinds.py")
SIGABRT = -signal.SIGABRT


def run(world, spec, *args, hosts=None, mode="3", timeout=90, **env):
    env = {"NPUDIST_FAULT_INJECT": spec, "TORCH_HCCL_ASYNC_ERROR_HANDLING": mode, **{k: str(v) for k, v in env.items()}}
    return launch(WORKER, world, [str(a) for a in args], env=env, timeout=timeout, hosts=hosts)


def fired(r, rank, what):
    return f"[npudist fault] rank {rank}: {what}" in r.stderr[rank]


@pytest.mark.timeout(120)
def test_hang_rank_never_joins_its_nth_collective():
    r = run(2, "rank=1,collective=3,kind=hang", "collectives", 5, 2)
    assert r.returncodes == [SIGABRT, SIGABRT], r.explain()  # both watchdogs take their process down
    assert fired(r, 1, "this rank never joined its collective #3 (all_reduce)"), r.explain()
    res0, res1 = r.results(0)[0], r.results(1)[0]
    assert res0["done"] == 2 and res1["done"] == 2, (res0, res1)
    assert "all_reduce collective_seq_id=3" in res0["error"] and "Ranks that never joined #3: [1]" in res0["error"]
    assert "rank(s) [1] never joined it" in res0["error"], res0["error"]
    assert res0["timeouts"] == 1
    # Once rank 0 gave up, the hung rank goes on and finds the communicator broken, as a late rank does.
    assert "the communicator is unusable after an earlier failure (rank 0 aborted" in res1["error"], res1
    assert res1["counts"]["collectives"] == 3  # counted from 1, the hung one included


@pytest.mark.timeout(120)
def test_slow_rank_every_nth_collective():
    r = run(2, "rank=1,kind=slow,delay_ms=60,every=2", "collectives", 10, 30)
    assert r.ok(), r.explain()
    res = [r.results(k)[0] for k in range(2)]
    assert all(x["error"] is None and x["done"] == 10 for x in res), res
    assert fired(r, 1, "collectives start late (from #2)") and "[npudist fault]" not in r.stderr[0]
    assert res[0]["elapsed"] >= 5 * 0.06, res  # rank 0 waited for 5 late arrivals
    assert res[1]["straggler"] > 10 * res[0]["straggler"], res  # the straggler score names rank 1


@pytest.mark.timeout(120)
def test_oom_at_the_nth_allocation():
    r = run(2, "rank=1,kind=oom,alloc=12", "allocs", 40)
    assert r.ok(), r.explain()
    assert r.results(0)[-1]["error"] is None and r.results(0)[-1]["done"] == 40
    oom = r.results(1)[0]
    assert oom["oom_at"] == 12 and oom["is_oom_type"] and oom["num_ooms"] == 1, oom
    assert r.results(1)[-1]["error"].startswith("OutOfMemoryError: NPU out of memory. Tried to allocate 4096 bytes (npu 1;")
    assert fired(r, 1, "npu allocation #12 (4096 bytes on npu:1) fails as out of memory"), r.explain()


@pytest.mark.timeout(120)
def test_store_down_after_seconds():
    r = run(2, "kind=store_down,after_s=1", "new_group", 1.5, 2)
    assert r.ok(), r.explain()
    for k in range(2):
        res = r.results(k)[0]
        assert res["error"].startswith("DistStoreError: store ") and "timed out after 2000 ms: the store did not answer" \
            in res["error"], res
        assert fired(r, k, "the store stopped answering"), r.explain()


@pytest.mark.timeout(120)
def test_partition_stalls_traffic_to_the_other_host():
    # rank 2 is alone on host b; from its 3rd collective on, its traffic to rank 0 stalls.
    r = run(3, "rank=2,kind=partition,peers=0,collective=3", "collectives", 5, 3, hosts=["a", "a", "b"])
    assert r.returncodes == [SIGABRT] * 3, r.explain()
    assert fired(r, 2, "network partition from rank(s) 0"), r.explain()
    err = r.results(0)[0]["error"]
    # Rank 2 joined #3 (it announced itself on its host), but nothing it sends reaches host a.
    assert "all_reduce collective_seq_id=3" in err and "Ranks that joined #3 but did not finish it: [1, 2]" in err, err
    assert r.results(0)[0]["done"] == 2
    assert "traffic to rank(s) 0 on another host stalls" in r.results(2)[0]["error"], r.explain()


@pytest.mark.timeout(120)
def test_kill_at_the_nth_step_under_npurun(tmp_path):
    p = run_npurun(["--nproc", "2", "--inject-fault", "rank=1,step=3,kind=kill", WORKER, "train", "6", "30"],
                   env={"TORCH_HCCL_ASYNC_ERROR_HANDLING": "3"}, timeout=100)
    out = p.stdout + p.stderr
    assert p.returncode != 0, out
    assert "[rank1]: [npudist fault] rank 1: SIGKILL at step 3 (injected: rank=1,step=3,kind=kill)" in out, out
    # npurun names the lost rank; rank 0 either fails its next collective naming rank 1 or is
    # stopped by npurun first (whichever comes first).
    assert "rank 1 failed first (killed by SIGKILL)" in out, out
    assert ("rank(s) [1] exited while this collective was in progress" in out
            or "stopped by npurun after rank 1 failed" in out), out


def test_npurun_rejects_a_bad_spec():
    p = run_npurun(["--nproc", "2", "--inject-fault", "rank=1,step=3,kind=kill", "--inject-fault",
                    "rank=1,step=3,kind=kil", WORKER], timeout=60)
    assert p.returncode != 0
    assert "--inject-fault: spec 1 'rank=1,step=3,kind=kil': kind 'kil' is not one of" in p.stderr, p.stderr
