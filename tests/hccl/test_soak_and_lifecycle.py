"""A soak of random interleaved collectives, and the shared segment's
lifecycle (mode 0600, unlinked once mapped, nothing left after exit)."""
import os
import random
import time
import uuid

import pytest
import torch
import torch.distributed as dist

from npudist import _shm_names
from npudist.testing import rank as rank_setup
from npudist.testing.checks import report
from npudist.testing.rank import deterministic_input as make

from . import Checker, run_ranks


def soak_on_rank(*argv):
    """Random interleaved collectives of different ops, sizes and dtypes, sync and
    async, on the default and a side stream; every result checked.

    argv: iterations seed"""
    RANK, WORLD = rank_setup.rank(), rank_setup.world_size()
    iters, seed = int(argv[0]), int(argv[1])
    rng = random.Random(seed)  # same stream on every rank: same op sequence
    chk = Checker()
    side = torch.npu.Stream()
    DTYPES = [torch.float32, torch.bfloat16, torch.float64, torch.int32, torch.int64, torch.uint8]
    pending = []  # (work, check) pairs verified later

    def ref_sum(ts, dtype):
        acc = torch.stack([t.cpu().double() if dtype.is_floating_point else t.cpu().long() for t in ts]).sum(0)
        return acc.to(dtype)

    for it in range(iters):
        op = rng.choice(["all_reduce", "all_gather", "reduce_scatter", "all_to_all", "broadcast", "p2p", "barrier"])
        dtype = rng.choice(DTYPES)
        n = rng.choice([0, 1, 3, 100, 4097, 20000, 70001, 150000])
        async_op = rng.random() < 0.4
        on_side = rng.random() < 0.3
        s = 1000 + it
        ins = [make(r, (n,), dtype, s, "npu") for r in range(WORLD)]
        tag = f"#{it} {op} {dtype} n={n} async={async_op} side={on_side}"
        ctx = torch.npu.stream(side) if on_side else torch.npu.stream(torch.npu.current_stream())
        with ctx:
            if op == "all_reduce":
                x = ins[RANK].clone()
                w = dist.all_reduce(x, async_op=async_op)
                want, got = ref_sum(ins, dtype), x
            elif op == "all_gather":
                got = torch.empty(n * WORLD, dtype=dtype, device="npu")
                w = dist.all_gather_into_tensor(got, ins[RANK], async_op=async_op)
                want = torch.cat([i.cpu() for i in ins])
            elif op == "reduce_scatter":
                full = [make(r, (n * WORLD,), dtype, s + 1, "npu") for r in range(WORLD)]
                got = torch.empty(n, dtype=dtype, device="npu")
                w = dist.reduce_scatter_tensor(got, full[RANK], async_op=async_op)
                want = ref_sum(full, dtype)[RANK * n:(RANK + 1) * n]
            elif op == "all_to_all":
                full = [make(r, (n * WORLD,), dtype, s + 2, "npu") for r in range(WORLD)]
                got = torch.empty(n * WORLD, dtype=dtype, device="npu")
                w = dist.all_to_all_single(got, full[RANK], async_op=async_op)
                want = torch.cat([full[r][RANK * n:(RANK + 1) * n].cpu() for r in range(WORLD)])
            elif op == "broadcast":
                root = rng.randrange(WORLD)
                got = ins[RANK].clone()
                w = dist.broadcast(got, src=root, async_op=async_op)
                want = ins[root].cpu()
            elif op == "p2p" and WORLD > 1:
                got = torch.empty(n, dtype=dtype, device="npu")
                reqs = dist.batch_isend_irecv([dist.P2POp(dist.isend, ins[RANK], (RANK + 1) % WORLD),
                                               dist.P2POp(dist.irecv, got, (RANK - 1) % WORLD)])
                w = reqs[-1] if reqs else None
                if not async_op:  # batch_isend_irecv is always asynchronous: wait as a user must
                    for q in reqs:
                        q.wait()
                want = ins[(RANK - 1) % WORLD].cpu()
            else:
                w = dist.barrier(async_op=async_op) if op == "barrier" else None
                got = want = None
        if got is None:
            if w is not None and async_op:
                w.wait()
            continue
        if async_op and w is not None:
            pending.append((w, got, want, tag, on_side))
        else:
            torch.npu.current_stream().wait_stream(side)
            chk.close(got, want, tag)
        if len(pending) > 4 or it == iters - 1:
            for w, g, wt, t, _was_side in pending:
                w.wait()
                chk.close(g, wt, t)
            pending.clear()
    torch.npu.synchronize()
    chk.report()
    dist.destroy_process_group()


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
    r = run_ranks(soak_on_rank, nranks, str(iters), str(seed), env={"HCCL_BUFFSIZE": "1"}, timeout=1500)
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
