"""Recycled Works of the latency path (csrc/hccl/work.h, WorkPool): a Work or a
future the user keeps is never reused under them (result, second wait, future value, error
and completion stay their collective's), values stay bitwise right through recycled Works,
and the group's counters count each collective once (``work_pool_on_rank``)."""
import pytest
import torch
import torch.distributed as dist

import npudist
from npudist.testing import rank as rank_setup
from npudist.testing.checks import report
from npudist.testing.rank import deterministic_input as make

from . import CPU_AND_NPU, Checker, run_ranks


def work_pool_on_rank():
    """Lifetime rules of recycled Works (csrc/hccl/work.h, WorkPool): a synchronous
    collective that runs on the caller's thread reuses a finished Work nobody holds any more.
    Whoever keeps a Work, or the future it gave, must see its own collective's tensors, values,
    error and completion however many collectives follow; values stay bitwise right on every op
    that goes through the recycled objects; the group's counters count every collective once.

    Collectives go through the ProcessGroup API with asyncOp=False (c10d's synchronous call, whose
    Work Python can keep) and through dist.* (whose Work Python drops at once: those get recycled)."""
    RANK, WORLD = rank_setup.rank(), rank_setup.world_size()
    chk = Checker()
    PG = dist.group.WORLD
    TOTAL = float(sum(range(1, WORLD + 1)))

    def sync_allreduce(t, op=dist.ReduceOp.SUM):
        opts = dist.AllreduceOptions()
        opts.asyncOp = False
        opts.reduceOp = op
        return PG.allreduce([t], opts)

    def churn(device, n=12):
        """Collectives whose Works are dropped at once (recycled), values checked."""
        for i in range(n):
            x = torch.full((5,), float(RANK + 1 + i), device=device)
            sync_allreduce(x).wait()
            want = float(sum(r + 1 + i for r in range(WORLD)))
            chk.close(x, torch.full((5,), want), f"churn {device} #{i}")

    def expect(cond, what):
        chk.run(what, lambda: None if cond() else (_ for _ in ()).throw(AssertionError(what)))

    def held_work(device):
        """1. A Work held across later collectives (more than the pool holds) keeps its own
        collective: completion, result(), a second wait(), its future."""
        a = torch.full((4,), float(RANK + 1), device=device)
        held = sync_allreduce(a)
        held.wait()
        churn(device)
        expect(lambda: held.is_completed() and held.is_success() and held.exception() is None,
               f"{device} held Work still completed")
        chk.run(f"{device} held Work waited twice", lambda: held.wait())
        res = held.result()
        expect(lambda: len(res) == 1 and res[0].data_ptr() == a.data_ptr(), f"{device} held Work result is its tensor")
        chk.close(res[0], torch.full((4,), TOTAL), f"{device} held Work result value")
        fut = held.get_future()
        expect(lambda: fut.done() and fut.value()[0].data_ptr() == a.data_ptr(), f"{device} held Work future")

    def future_outlives_work(device):
        """2. A future outlives its Work: the Work is recycled, the future keeps its value."""
        b = torch.full((3,), float(10 * (RANK + 1)), device=device)
        w = sync_allreduce(b)
        w.wait()
        fut = w.get_future()
        w = None  # the group may now recycle it
        churn(device)
        expect(lambda: fut.done() and fut.value()[0].data_ptr() == b.data_ptr(), f"{device} future after its Work's reuse")
        chk.close(fut.value()[0], torch.full((3,), 10 * TOTAL), f"{device} future value after reuse")

    def failed_work(device):
        """3. A failed collective's Work keeps its error while recycled Works succeed."""
        bad = sync_allreduce(torch.ones(4 + (RANK == WORLD - 1), device=device))
        errors = []
        for _ in range(2):
            try:
                bad.wait()
                errors.append(None)
            except Exception as e:  # noqa: BLE001 - the error text is checked
                errors.append(str(e))
            churn(device)
        expect(lambda: errors[0] is not None, f"{device} mismatch raises")
        expect(lambda: errors[1] == errors[0], f"{device} failed Work keeps its own error after reuse ({errors})")
        expect(lambda: bad.is_completed() and not bad.is_success() and bad.exception() is not None,
               f"{device} failed Work state")

    def survives_abort(device):
        """4. A held (recyclable) Work of a group that is then aborted stays its finished
        collective; the aborted group's next collective fails with a clear error."""
        group = dist.new_group()
        backend = group._get_backend(torch.device("npu"))
        opts = dist.AllreduceOptions()
        opts.asyncOp = False
        t = torch.full((2,), float(RANK + 1), device=device)
        w = group.allreduce([t], opts)
        w.wait()
        for _ in range(3):
            group.allreduce([torch.ones(2, device=device)], opts).wait()
        dist.barrier()  # every rank is done with the group: its abort fails no peer's collective
        backend.abort()
        expect(lambda: w.is_completed() and w.is_success(), f"{device} held Work after abort")
        chk.run(f"{device} held Work wait after abort", lambda: w.wait())
        chk.close(w.result()[0], torch.full((2,), TOTAL), f"{device} held Work value after abort")
        err = []
        try:
            group.allreduce([torch.ones(2, device=device)], opts).wait()
        except Exception as e:  # noqa: BLE001 - the error text is checked
            err.append(str(e))
        expect(lambda: err and "abort" in err[0].lower(), f"{device} aborted group raises ({err})")

    def every_op(device):
        """5. Op kinds through recycled Works, interleaved with async ones (never recycled),
        values bitwise (fixed rank order, float32 accumulation for 16-bit types: the engine's)."""
        seed = 7
        for dtype in (torch.float32, torch.bfloat16, torch.int64):
            for i in range(3):
                seed += 1
                ins = [make(r, (33,), dtype, seed, device) for r in range(WORLD)]
                x = ins[RANK].clone()
                if i == 1:
                    dist.all_reduce(x, async_op=True).wait()
                else:
                    dist.all_reduce(x)
                acc = torch.float64 if dtype == torch.int64 else torch.float32
                ref = ins[0].to(acc)
                for r in range(1, WORLD):
                    ref = ref + ins[r].to(acc)
                chk.close(x, ref.to(dtype), f"{device} all_reduce {dtype} #{i}", rtol=0, atol=0)
                y = make(0, (9,), dtype, seed, device) if RANK == 0 else torch.zeros(9, dtype=dtype, device=device)
                dist.broadcast(y, src=0)
                chk.close(y, make(0, (9,), dtype, seed, device), f"{device} broadcast {dtype} #{i}", rtol=0, atol=0)
                out = torch.empty(9 * WORLD, dtype=dtype, device=device)
                dist.all_gather_into_tensor(out, make(RANK, (9,), dtype, seed, device))
                chk.close(out, torch.cat([make(r, (9,), dtype, seed, device) for r in range(WORLD)]),
                          f"{device} all_gather {dtype} #{i}", rtol=0, atol=0)
        if device == "npu":
            torch.npu.synchronize()

    for device in ("cpu", "npu"):
        held_work(device)
        future_outlives_work(device)
        failed_work(device)
        survives_abort(device)
        churn(device, 3)
        every_op(device)

    # 6. The group's counters count each collective once and nothing stays in flight.
    dist.barrier()
    torch.npu.synchronize()
    stats = npudist._C._hccl_stats()["groups"][0]
    ar = stats["ops"]["all_reduce"]
    expect(lambda: ar["completed"] + ar["failed"] == ar["started"], f"all_reduce counters add up ({ar})")
    expect(lambda: ar["failed"] == 2, f"the two mismatches counted once each ({ar})")
    report(kind="done")
    chk.finish()


@pytest.mark.timeout(300)
def test_work_pool_lifetimes():
    r = run_ranks(work_pool_on_rank, 2, backend=CPU_AND_NPU, timeout=240)
    assert r.returncodes == [0, 0], r.explain()
    for i in range(2):
        res = r.results(i)[-1]
        assert res["nfail"] == 0, "\n".join(res["failures"])
        assert res["checks"] > 150, res
