"""Bad input and broken groups: clear errors on every rank, no hang, no wrong
data, and nothing left in /dev/shm."""
import datetime
import os
import signal
import time
import uuid

import pytest
import torch
import torch.distributed as dist

from npudist.testing import multiproc
from npudist.testing import rank as rank_setup
from npudist.testing.checks import report

from . import run_ranks


def errors_on_rank():
    """Bad input on one long-lived group: each case must raise on every rank (or
    on the rank that is wrong, for point-to-point), and the group must keep
    working afterwards. Reports one RESULT line per case with the error text."""
    RANK, WORLD = rank_setup.rank(), rank_setup.world_size()
    DEV = "npu"

    def case(name, fn):
        err = None
        try:
            fn()
            torch.npu.synchronize()
        except Exception as e:  # noqa: BLE001 - the error text is the result
            err = f"{type(e).__name__}: {e}"
        # The group still works after the error.
        x = torch.full((3,), float(RANK), device=DEV)
        dist.all_reduce(x)
        ok_after = x.tolist() == [float(sum(range(WORLD)))] * 3
        report(case=name, error=err, ok_after=ok_after)

    rank_setup.init("hccl", timeout=datetime.timedelta(seconds=60))
    case("count", lambda: dist.all_reduce(torch.ones(5 if RANK == 1 else 4, device=DEV)))
    case("count_large", lambda: dist.all_reduce(torch.ones(300000 + (RANK == 1), device=DEV)))
    case("dtype", lambda: dist.all_reduce(torch.ones(4, device=DEV, dtype=torch.float64 if RANK == WORLD - 1 else torch.float32)))
    case("op", lambda: dist.broadcast(torch.ones(4, device=DEV), src=0) if RANK == 0 else dist.all_reduce(torch.ones(4, device=DEV)))
    case("root", lambda: dist.broadcast(torch.ones(4, device=DEV), src=1 if RANK == 1 else 0))
    case("redop", lambda: dist.all_reduce(torch.ones(4, device=DEV), op=dist.ReduceOp.MAX if RANK == 1 else dist.ReduceOp.SUM))
    case("alltoall_splits", lambda: dist.all_to_all_single(
        torch.empty(WORLD + (1 if RANK == 0 else 0), device=DEV), torch.ones(WORLD, device=DEV),
        output_split_sizes=[1 + (1 if (RANK == 0 and i == WORLD - 1) else 0) for i in range(WORLD)],
        input_split_sizes=[1] * WORLD))
    case("wrong_device", lambda: dist.all_gather_into_tensor(
        torch.empty(4 * WORLD, device="cpu" if RANK == 1 else DEV), torch.ones(4, device=DEV)))
    case("wrong_size_local", lambda: dist.all_gather_into_tensor(
        torch.empty(4 * WORLD + (1 if RANK == 1 else 0), device=DEV), torch.ones(4, device=DEV)))
    case("unsupported_dtype", lambda: dist.all_reduce(torch.ones(4, device=DEV, dtype=torch.uint16)))
    case("unsupported_op", lambda: dist.all_reduce(torch.ones(4, device=DEV, dtype=torch.int32), op=dist.ReduceOp.BAND))
    case("avg_int", lambda: dist.all_reduce(torch.ones(4, device=DEV, dtype=torch.int32), op=dist.ReduceOp.AVG))
    case("async_count", lambda: dist.all_reduce(torch.ones(6 if RANK == 0 else 4, device=DEV), async_op=True).wait())
    if WORLD > 1:
        def p2p_size():
            if RANK == 0:
                dist.send(torch.ones(4, device=DEV), 1)
            elif RANK == 1:
                dist.recv(torch.empty(5, device=DEV), 0)
        case("p2p_size", p2p_size)

        def recv_noncontig():
            if RANK == 0:
                dist.send(torch.arange(6.0, device=DEV), 1)
                dist.send(torch.arange(6.0, device=DEV) + 100, 1)
            elif RANK == 1:
                a = torch.zeros(12, device=DEV)[::2]
                dist.recv(a, 0)
                b = torch.zeros(6, device=DEV)
                dist.recv(b, 0)
                if a.tolist() != list(range(6)) or b.tolist() != [100.0 + i for i in range(6)]:
                    raise AssertionError(f"wrong data {a.tolist()} {b.tolist()}")
        case("recv_noncontig", recv_noncontig)

        def wait_timeout():
            if RANK == 0:
                w = dist.all_reduce(torch.ones(2, device=DEV), async_op=True)
                try:
                    w.wait(timeout=datetime.timedelta(milliseconds=300))
                finally:
                    w.wait()  # the others join after their pause
            else:
                time.sleep(1.5)
                dist.all_reduce(torch.ones(2, device=DEV))
        case("wait_timeout", wait_timeout)
    torch.npu.synchronize()
    dist.destroy_process_group()


def faults_on_rank(*argv):
    """Failures that break a group: argv[0] selects the scenario.

    timeout  - rank WORLD-1 never joins an all_reduce; the others time out
               (group timeout 3 s) naming it, and the group stays unusable.
    death    - rank WORLD-1 is killed (SIGKILL) before an all_reduce; the others
               fail promptly, long before the 120 s group timeout.
    abort    - rank 0 aborts the group while the others wait in all_reduce.
    connect  - rank WORLD-1 never calls new_group; the others' setup fails after
               HCCL_CONNECT_TIMEOUT (set to 3 s by the test) naming it."""
    RANK, WORLD = rank_setup.rank(), rank_setup.world_size()
    scenario = argv[0]
    DEV = "npu"
    timeout = datetime.timedelta(seconds=3 if scenario == "timeout" else 120)
    rank_setup.init("hccl", timeout=timeout)
    x = torch.ones(8, device=DEV)
    dist.all_reduce(x)  # the group works
    last = WORLD - 1
    t0 = time.monotonic()
    err = None
    try:
        if scenario == "timeout":
            if last != RANK:
                dist.all_reduce(x)
            else:
                time.sleep(6)
        elif scenario == "death":
            if last == RANK:
                os.kill(os.getpid(), signal.SIGKILL)
            dist.all_reduce(x)
        elif scenario == "connect":
            if last != RANK:
                dist.new_group(list(range(WORLD)))
            else:
                time.sleep(6)
        elif scenario == "abort":
            if RANK == 0:
                time.sleep(1.0)
                dist.group.WORLD._get_backend(torch.device(DEV)).abort()
            else:
                dist.all_reduce(x)
        torch.npu.synchronize()
    except Exception as e:  # noqa: BLE001 - the error text is the result
        err = f"{type(e).__name__}: {e}"
    elapsed = time.monotonic() - t0
    after = None
    try:
        dist.all_reduce(torch.ones(2, device=DEV))
        torch.npu.synchronize()
    except Exception as e:  # noqa: BLE001  (the error is the reported result)
        after = f"{type(e).__name__}: {e}"
    report(rank=RANK, error=err, elapsed=elapsed, after=after)
    os._exit(0)  # the group is broken: skip destroy_process_group's collectives


def overlapping_input_on_rank():
    """An all_reduce on a tensor whose elements overlap in memory (``expand`` gives stride 0): the
    caller's error, then ordinary collectives for two seconds and a clean teardown (found by trying hccl as a PyTorch user;
    run with the watchdog's default TORCH_HCCL_ASYNC_ERROR_HANDLING=3)."""
    RANK, WORLD = dist.get_rank(), dist.get_world_size()
    dev = torch.device("npu", torch.npu.current_device())
    err = None
    try:
        dist.all_reduce(torch.ones(1, device=dev).expand(4))
        torch.npu.synchronize()
    except Exception as e:  # noqa: BLE001 - the error is the result
        err = f"{type(e).__name__}: {e}"
    report(case="overlap", error=err)
    ok = True
    deadline = time.monotonic() + 2.0
    while time.monotonic() < deadline:
        x = torch.full((3,), float(RANK), device=dev)
        dist.all_reduce(x)
        ok = ok and x.tolist() == [float(sum(range(WORLD)))] * 3
        time.sleep(0.1)
    dist.destroy_process_group()
    report(case="after", ok=ok)


def uneven_lists_on_rank():
    """all_gather / reduce_scatter with a list of tensors of different sizes (one per rank), which
    ProcessGroupNCCL runs as coalesced broadcasts / reduces (found by trying hccl as a PyTorch user)."""
    RANK, WORLD = dist.get_rank(), dist.get_world_size()
    dev = torch.device("npu", torch.npu.current_device())
    for name in ("all_gather", "reduce_scatter"):
        err, ok = None, False
        try:
            if name == "all_gather":
                outs = [torch.empty(r + 1, device=dev) for r in range(WORLD)]
                dist.all_gather(outs, torch.full((RANK + 1,), float(RANK), device=dev))
                ok = [o.tolist() for o in outs] == [[float(r)] * (r + 1) for r in range(WORLD)]
            else:
                out = torch.empty(RANK + 1, device=dev)
                dist.reduce_scatter(out, [torch.full((r + 1,), float(RANK + 1), device=dev) for r in range(WORLD)])
                ok = out.tolist() == [float(sum(range(1, WORLD + 1)))] * (RANK + 1)
            torch.npu.synchronize()
        except Exception as e:  # noqa: BLE001 - the error is the result
            err = f"{type(e).__name__}: {e}"
        report(case=name, error=err, ok=ok)
    dist.destroy_process_group()


WORLD = 3


@pytest.fixture(scope="module")
def error_cases():
    r = run_ranks(errors_on_rank, WORLD, backend=None, timeout=240)
    assert r.returncodes == [0] * WORLD, r.explain()
    return {rank: {res["case"]: res for res in r.results(rank)} for rank in range(WORLD)}


@pytest.mark.timeout(300)
@pytest.mark.parametrize("case,needle", [
    ("count", "rank 1 has count=5 but rank 0 has count=4"),
    ("count_large", "rank 1 has count=300001 but rank 0 has count=300000"),
    ("dtype", "rank 2 has dtype=float64 but rank 0 has dtype=float32"),
    ("op", "collective=all_reduce but rank 0 has collective=broadcast"),
    ("root", "rank 1 has root=1 but rank 0 has root=0"),
    ("redop", "rank 1 has reduce op=MAX but rank 0 has reduce op=SUM"),
    ("alltoall_splits", "rank 2 sends 1 elements to rank 0 but rank 0 expects 2 from rank 2"),
    ("async_count", "rank 1 has count=4 but rank 0 has count=6"),
])
def test_mismatch_raises_on_every_rank(error_cases, case, needle):
    for rank in range(WORLD):
        res = error_cases[rank][case]
        assert res["error"] and needle in res["error"], (rank, res)
        assert "before any data moved" in res["error"]
        assert res["ok_after"], (rank, res)  # the group keeps working


@pytest.mark.timeout(300)
@pytest.mark.parametrize("case,needle", [
    ("wrong_device", "mix devices"),
    ("wrong_size_local", "the output must have group size x input elements"),
])
def test_one_rank_bad_input_fails_everyone(error_cases, case, needle):
    assert error_cases[1][case]["error"].startswith("ValueError") and needle in error_cases[1][case]["error"]
    for rank in (0, 2):
        err = error_cases[rank][case]["error"]
        assert "rank 1 passed invalid input" in err and needle in err, err
    assert all(error_cases[r][case]["ok_after"] for r in range(WORLD))


@pytest.mark.timeout(300)
@pytest.mark.parametrize("case,needle", [
    ("unsupported_dtype", "UInt16, which hccl does not support"),
    ("unsupported_op", "BAND/BOR/BXOR are not supported"),
    ("avg_int", "AVG needs a floating-point tensor"),
])
def test_unsupported_raises_value_error(error_cases, case, needle):
    for rank in range(WORLD):
        err = error_cases[rank][case]["error"]
        assert err.startswith("ValueError") and needle in err, err
        assert error_cases[rank][case]["ok_after"]


@pytest.mark.timeout(300)
def test_p2p_size_mismatch_and_wait_timeout(error_cases):
    assert "rank 0 sent 4 float32 elements but this rank expects 5" in error_cases[1]["p2p_size"]["error"]
    assert error_cases[0]["p2p_size"]["error"] is None  # the sender's send completed (documented)
    assert all(error_cases[r]["recv_noncontig"]["error"] is None for r in range(WORLD)), error_cases[1]["recv_noncontig"]
    assert "Work.wait(timeout=300 ms) timed out" in error_cases[0]["wait_timeout"]["error"]
    assert error_cases[1]["wait_timeout"]["error"] is None
    assert all(error_cases[r]["wait_timeout"]["ok_after"] for r in range(WORLD))


def _shm_entries(tag):
    return [n for n in os.listdir("/dev/shm") if tag in n]


@pytest.mark.timeout(120)
@pytest.mark.parametrize("scenario", ["timeout", "death", "abort", "connect"])
def test_broken_group(scenario):
    tag = "t" + uuid.uuid4().hex[:10]
    env = {"NPUDIST_JOB_TAG": tag, "HCCL_CONNECT_TIMEOUT": "3"}
    r = run_ranks(faults_on_rank, WORLD, scenario, backend=None, env=env, timeout=90)
    survivors = [0, 1] if scenario == "death" else list(range(WORLD))
    results = {rank: r.results(rank)[-1] for rank in survivors}
    if scenario == "timeout":
        for rank in (0, 1):
            err = results[rank]["error"]
            assert "timed out after" in err and "rank(s) [2] never joined it" in err, err
            assert "Ranks that never joined #2: [2]" in err, err
            assert results[rank]["elapsed"] < 30
        # The late rank fails at once instead of completing with the others' stale data.
        assert "gave up" in results[2]["after"] and "timed out" in results[2]["after"], results[2]
    elif scenario == "death":
        assert r.returncodes[2] == -9
        for rank in (0, 1):
            err = results[rank]["error"]
            assert "2" in err and "exited while this collective was in progress" in err, err
            assert results[rank]["elapsed"] < 30, results[rank]  # far below the 120 s group timeout
    elif scenario == "connect":
        for rank in (0, 1):
            err = results[rank]["error"]
            assert "timed out after 3 s (HCCL_CONNECT_TIMEOUT): ranks 2 never joined" in err, err
            assert results[rank]["elapsed"] < 30
    else:
        for rank in (1, 2):
            assert "aborted by rank 0" in results[rank]["error"], results[rank]
    for rank in survivors:
        assert r.returncodes[rank] == 0, r.explain()
        if results[rank]["error"] and scenario != "connect":  # a rank that saw the failure cannot use the group
            assert "unusable after an earlier failure" in results[rank]["after"], results[rank]
    assert _shm_entries(tag) == []


@pytest.mark.timeout(120)
def test_overlapping_tensor_is_rejected_up_front_and_the_job_survives():
    # ProcessGroupNCCL refuses such a tensor before running anything (ValueError) and the job goes
    # on; under the watchdog's default policy (take the process down on a failed collective,
    # hence multiproc.run_on_ranks without tests/hccl's TORCH_HCCL_ASYNC_ERROR_HANDLING=0) an error
    # found inside the collective would end the job.
    r = multiproc.run_on_ranks(overlapping_input_on_rank, 2, timeout=90)
    assert r.returncodes == [0, 0], r.explain()
    for rank in range(2):
        res = {x["case"]: x for x in r.results(rank)}
        assert res["after"]["ok"], (rank, res)
        assert res["overlap"]["error"].startswith("ValueError") and "share memory" in res["overlap"]["error"], res


@pytest.mark.timeout(120)
@pytest.mark.parametrize("world", [2, 3])
def test_uneven_all_gather_and_reduce_scatter_lists(world):
    # ProcessGroupNCCL runs lists of per-rank sizes as one broadcast / reduce per rank
    r = run_ranks(uneven_lists_on_rank, world, timeout=90)
    assert r.returncodes == [0] * world, r.explain()
    for rank in range(world):
        for res in r.results(rank):
            assert res["error"] is None and res["ok"], (rank, res)
