"""A soak of random interleaved collectives, and the shared segment's
lifecycle (mode 0600, unlinked once mapped, nothing left after exit)."""
import os
import time
import uuid

import pytest
import torch
import torch.distributed as dist

from npudist import _shm_names
from npudist.testing.checks import Checker, report

from . import launch, run_ranks


def overlap_on_rank():
    """Collectives overlap compute: an async_op=True all_reduce and an all_gather
    issued on a side stream (as FSDP2 prefetches) complete in the background
    while this thread computes, without anyone waiting for them."""
    RANK, WORLD = dist.get_rank(), dist.get_world_size()
    chk = Checker()
    n = 1 << 20
    x = torch.full((n,), float(RANK + 1), device="npu")
    a = torch.randn(256, 256, device="npu")

    def compute(seconds):
        t0 = time.monotonic()
        while time.monotonic() - t0 < seconds:
            a @ a

    for _ in range(3):  # warm up
        dist.all_reduce(torch.ones(8, device="npu"))
    # 1. async_op=True: the group's progress thread runs it during compute.
    w = dist.all_reduce(x, async_op=True)
    compute(1.5)
    done_async = w.is_completed()
    w.wait()
    chk.close(x, torch.full((n,), float(sum(range(1, WORLD + 1)))), "async all_reduce")
    # 2. FSDP2 style: all_gather (async_op=False) issued on a side stream.
    side = torch.npu.Stream()
    out = torch.empty(n * WORLD, device="npu")
    src = torch.full((n,), float(RANK), device="npu")
    with torch.npu.stream(side):
        dist.all_gather_into_tensor(out, src)
    compute(1.5)
    done_side = side.query()
    torch.npu.current_stream().wait_stream(side)
    chk.close(out, torch.cat([torch.full((n,), float(r)) for r in range(WORLD)]), "side-stream all_gather")
    chk.report(done_async=done_async, done_side=done_side)
    dist.destroy_process_group()


def lifecycle_on_rank():
    """The shared segment: mapped with mode 0600, its name already gone from
    /dev/shm once the group exists; and, with TORCH_DISTRIBUTED_DEBUG=DETAIL,
    PyTorch's cross-rank checks catch a mismatch between simulated hosts."""
    RANK = dist.get_rank()
    tag = os.environ["NPUDIST_JOB_TAG"]
    prefix = "/dev/shm/" + _shm_names.job_prefix(tag)  # the engine names it by the rule npurun's cleanup uses
    maps = [line for line in open("/proc/self/maps") if prefix in line]
    modes = []
    for line in maps:
        rng = line.split()[0]
        try:
            modes.append(oct(os.stat(f"/proc/self/map_files/{rng}").st_mode & 0o777))
        except OSError as e:
            modes.append(str(e))
    listed = [n for n in os.listdir("/dev/shm") if n.startswith(_shm_names.job_prefix(tag))]
    err = None
    if os.environ.get("TORCH_DISTRIBUTED_DEBUG") == "DETAIL":
        try:
            dist.all_reduce(torch.ones(4 + RANK, device="npu"))
            torch.npu.synchronize()
        except Exception as e:  # noqa: BLE001 - the error text is the result
            err = f"{type(e).__name__}: {e}"
    report(rank=RANK, mapped=len(maps), deleted=all("(deleted)" in m for m in maps), modes=modes, listed=listed,
           error=err)
    if err is None:
        dist.destroy_process_group()
    else:
        os._exit(0)


def _soak(nranks, iters, seed):
    r = launch("soak.py", nranks, [iters, seed], env={"HCCL_BUFFSIZE": "1"}, timeout=1500)
    assert r.returncodes == [0] * nranks, r.explain()
    for rank in range(nranks):
        res = r.results(rank)[-1]
        assert res["nfail"] == 0, "\n".join(res["failures"])
        assert res["checks"] > iters // 2


@pytest.mark.timeout(300)
def test_soak_short():
    _soak(3, 120, 11)


@pytest.mark.slow
@pytest.mark.timeout(1800)
@pytest.mark.parametrize("nranks,seed", [(2, 21), (4, 22)])
def test_soak_long(nranks, seed):
    _soak(nranks, 2500, seed)


@pytest.mark.timeout(120)
@pytest.mark.parametrize("long_tag", [False, True], ids=["tag12", "tag64"])
def test_segment_mode_unlinked_and_cleaned(long_tag):
    # A 64-character tag (npurun's limit) is named by the rule npurun's cleanup applies.
    tag = "life" + uuid.uuid4().hex[:8] + ("L" * 52 if long_tag else "")
    r = run_ranks(lifecycle_on_rank, 2, env={"NPUDIST_JOB_TAG": tag}, timeout=90)
    assert r.returncodes == [0, 0], r.explain()
    for rank in range(2):
        res = r.results(rank)[-1]
        assert res["mapped"] >= 1 and res["deleted"], res
        assert set(res["modes"]) == {"0o600"}, res
        assert res["listed"] == []
    assert [n for n in os.listdir("/dev/shm") if n.startswith(_shm_names.job_prefix(tag))] == []


@pytest.mark.timeout(120)
def test_detail_debug_catches_cross_host_mismatch():
    tag = "dbg" + uuid.uuid4().hex[:8]
    r = run_ranks(lifecycle_on_rank, 2, env={"NPUDIST_JOB_TAG": tag, "TORCH_DISTRIBUTED_DEBUG": "DETAIL"},
               hosts=["hA", "hB"], timeout=90)
    for rank in range(2):
        res = r.results(rank)[-1]
        err = res["error"] or ""
        assert "Detected mismatch between collectives" in err and "TensorShape=[4]" in err, res


@pytest.mark.timeout(120)
def test_collectives_overlap_compute():
    """async_op=True and side-stream collectives complete while the issuing
    thread computes (nobody waits for them), as on CUDA."""
    r = run_ranks(overlap_on_rank, 2, timeout=100)
    assert r.returncodes == [0, 0], r.explain()
    for rank in range(2):
        res = r.results(rank)[-1]
        assert res["nfail"] == 0, res["failures"]
        assert res["done_async"] and res["done_side"], res
