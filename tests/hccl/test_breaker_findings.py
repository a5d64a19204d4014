"""Bad input found by trying hccl as a PyTorch user would (helper "breaker"); each test is a
strict xfail while hccl differs from ProcessGroupNCCL, so the lead can route it (csrc/hccl is
owned by another helper); the fix removes the marker."""
import json
import os
import subprocess

import pytest

from npudist.testing import multiproc
from npudist.testing.npurun import run_npurun

from . import WORKERS


@pytest.mark.timeout(120)
@pytest.mark.xfail(strict=True, reason="breaker: all_reduce of an expanded (stride-0, overlapping) npu tensor "
                   "raises torch's RuntimeError on the caller, the next collectives work, and ~2 s later the "
                   "watchdog kills every rank with SIGABRT for that already-reported error; ProcessGroupNCCL "
                   "rejects it up front with ValueError('Tensors must be contiguous') and the job goes on")
def test_overlapping_tensor_is_rejected_up_front_and_the_job_survives():
    # The default watchdog policy (take the process down on a collective failure) is what kills the
    # job, so this runs without tests/hccl's TORCH_HCCL_ASYNC_ERROR_HANDLING=0.
    r = multiproc.launch(os.path.join(WORKERS, "breaker_overlap.py"), 2, timeout=90)
    assert r.returncodes == [0, 0], r.explain()
    for rank in range(2):
        res = {x["case"]: x for x in r.results(rank)}
        assert res["after"]["ok"], (rank, res)
        assert res["overlap"]["error"] and res["overlap"]["error"].startswith("ValueError"), (rank, res)


@pytest.mark.timeout(120)
@pytest.mark.xfail(strict=True, reason="breaker: all_gather / reduce_scatter with per-rank tensors of different "
                   "sizes raise ValueError ('output tensors must have the input's N elements'); ProcessGroupNCCL "
                   "runs them (as coalesced broadcasts / reduces)")
def test_uneven_all_gather_and_reduce_scatter_lists():
    r = multiproc.launch(os.path.join(WORKERS, "breaker_uneven.py"), 2, timeout=90,
                         env={"TORCH_HCCL_ASYNC_ERROR_HANDLING": "0"})
    assert r.returncodes == [0, 0], r.explain()
    for rank in range(2):
        for res in r.results(rank):
            assert res["error"] is None and res["ok"], (rank, res)


@pytest.mark.slow  # ~30 s: the wait it shows is the point (full tier)
@pytest.mark.timeout(120)
@pytest.mark.xfail(strict=True, raises=(AssertionError, subprocess.TimeoutExpired),
                   reason="breaker: group setup ignores init_process_group(timeout=3 s) and waits "
                   "HCCL_CONNECT_TIMEOUT (120 s) for a rank that never calls init_process_group (also after that "
                   "rank has exited); ProcessGroupNCCL's setup waits on the store with the group's timeout and "
                   "raises DistStoreError after it")
def test_group_setup_honours_the_init_timeout():
    # Through npurun: its agent's store already holds every rank, so the wait is hccl's own setup (with
    # a launcher-less start, rank 0's TCPStore times out first, in torch, and hides it).
    proc = run_npurun(["--nproc", 2, os.path.join(WORKERS, "breaker_setup_timeout.py")],
                      env={"TORCH_HCCL_ASYNC_ERROR_HANDLING": "0"}, timeout=25)
    results = [json.loads(line.split("RESULT ", 1)[1]) for line in proc.stdout.splitlines()
               if line.startswith("[rank0]: RESULT ")]
    assert proc.returncode == 0 and len(results) == 1, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert results[0]["error"] and results[0]["seconds"] < 10, results[0]
