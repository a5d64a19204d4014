"""Bad input and broken groups: clear errors on every rank, no hang, no wrong
data, and nothing left in /dev/shm."""
import os
import uuid

import pytest

from npudist.testing import multiproc

from . import WORKERS, launch

WORLD = 3


@pytest.fixture(scope="module")
def error_cases():
    r = launch("errors.py", WORLD, timeout=240)
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
    r = launch("faults.py", WORLD, [scenario], env=env, timeout=90)
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
    # hence multiproc.launch without tests/hccl's TORCH_HCCL_ASYNC_ERROR_HANDLING=0) an error
    # found inside the collective would end the job.
    r = multiproc.launch(os.path.join(WORKERS, "overlapping_input.py"), 2, timeout=90)
    assert r.returncodes == [0, 0], r.explain()
    for rank in range(2):
        res = {x["case"]: x for x in r.results(rank)}
        assert res["after"]["ok"], (rank, res)
        assert res["overlap"]["error"].startswith("ValueError") and "share memory" in res["overlap"]["error"], res


@pytest.mark.timeout(120)
@pytest.mark.parametrize("world", [2, 3])
def test_uneven_all_gather_and_reduce_scatter_lists(world):
    # ProcessGroupNCCL runs lists of per-rank sizes as one broadcast / reduce per rank
    r = launch("uneven_lists.py", world, timeout=90)
    assert r.returncodes == [0] * world, r.explain()
    for rank in range(world):
        for res in r.results(rank):
            assert res["error"] is None and res["ok"], (rank, res)
