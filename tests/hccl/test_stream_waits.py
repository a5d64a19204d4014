"""Stream-ordered waits (Work.wait() on npu tensors) on a 2-D mesh, interleaved as FSDP2 + TP do:
no deadlock when a thread holding the GIL waits on a stream for a collective that the group's
thread is finishing (docs/collectives.md, "Who releases a collective's tensors")."""
import time

import pytest
import torch
import torch.distributed as dist
from torch.distributed.device_mesh import init_device_mesh

from . import Checker, run_ranks


def stream_waits_on_rank():
    """Stream-ordered waits on a (dp, tp) = (2, 2) mesh, interleaved as FSDP2 + TP interleave them.

    Each step: an async TP all_gather whose Work is waited (stream-ordered) and dropped, then a storage
    resize_ (FSDP2's reshard: a Python call that keeps the GIL while it waits for the stream); then an
    FSDP2-style reduce_scatter on a side stream over "dp", the default stream waiting for it, and
    another resize_. One rank of each group arrives late, so the others wait inside resize_ while their
    group's thread finishes the collective. Before the fix that thread dropped the last C++ references
    to the Python-owned tensors (which takes the GIL) before marking the collective done: a deadlock."""
    chk = Checker()
    mesh = init_device_mesh("npu", (2, 2), mesh_dim_names=("dp", "tp"))
    dp, tp = mesh.get_group("dp"), mesh.get_group("tp")
    dp_rank, tp_rank = mesh["dp"].get_local_rank(), mesh["tp"].get_local_rank()
    rs_stream = torch.npu.Stream()
    n, steps = 1024, 6
    for step in range(steps):
        # TP: async all_gather, stream-ordered wait, Work dropped, then a GIL-holding wait.
        shard = torch.full((n,), float(10 * step + tp_rank), device="npu")
        gathered = torch.empty(2 * n, device="npu")
        if tp_rank == step % 2:
            time.sleep(0.2)  # the peer is already waiting inside resize_
        work = dist.all_gather_into_tensor(gathered, shard, group=tp, async_op=True)
        work.wait()
        del work
        scratch = torch.empty(n, device="npu")
        scratch.untyped_storage().resize_(0)
        chk.close(gathered, torch.cat([torch.full((n,), float(10 * step + r)) for r in range(2)]),
                  f"step {step}: tp all_gather")
        # FSDP2: reduce_scatter on its own stream, the default stream waits for it.
        grads = torch.full((2 * n,), float(dp_rank + 1), device="npu")
        out = torch.empty(n, device="npu")
        rs_stream.wait_stream(torch.npu.current_stream())
        if dp_rank == step % 2:
            time.sleep(0.2)
        with torch.npu.stream(rs_stream):
            work = dist.reduce_scatter_tensor(out, grads, group=dp, async_op=True)
            work.wait()
            del work
        torch.npu.current_stream().wait_stream(rs_stream)
        scratch = torch.empty(n, device="npu")
        scratch.untyped_storage().resize_(0)
        chk.close(out, torch.full((n,), 3.0), f"step {step}: dp reduce_scatter")
    torch.npu.synchronize()
    chk.report(steps=steps)
    dist.destroy_process_group()


def future_callback_on_rank():
    """A Python callback on a collective's future (get_future().then(fn)) plus a stream-ordered wait and a
    GIL-holding wait (storage resize_), with the peer arriving late. This deadlocked when the group's thread
    ran the callback (which takes the GIL) before the collective counted as done; now the future completes
    right after."""
    RANK = dist.get_rank()
    chk = Checker()
    t = torch.ones(1024, device="npu")
    steps = 4
    for step in range(steps):
        if step % 2 == RANK:
            time.sleep(0.3)  # the peer is already waiting inside resize_
        work = dist.all_reduce(t, async_op=True)
        fut = work.get_future().then(lambda f: f.value()[0] * 2)
        work.wait()
        torch.empty(16, device="npu").untyped_storage().resize_(0)
        chk.close(fut.wait(), torch.full((1024,), float(2 * 2 ** (step + 1))), f"step {step}: callback result")
    torch.npu.synchronize()
    chk.report(steps=steps)
    dist.destroy_process_group()


@pytest.mark.timeout(150)
def test_stream_ordered_waits_with_gil_held_on_a_2d_mesh():
    r = run_ranks(stream_waits_on_rank, 4, env={"WORKER_HANG_DUMP_S": "60"}, timeout=90)
    assert r.returncodes == [0] * 4, r.explain()
    for rank in range(4):
        res = r.results(rank)[-1]
        assert res["nfail"] == 0, "\n".join(res["failures"])
        assert res["checks"] == 2 * res["steps"]


@pytest.mark.timeout(150)
def test_future_callback_with_stream_ordered_wait_and_gil_held():
    """A Python callback on the future (it takes the GIL) runs after the collective is done."""
    r = run_ranks(future_callback_on_rank, 2, env={"WORKER_HANG_DUMP_S": "45"}, timeout=60)
    assert r.returncodes == [0] * 2, r.explain()
    for rank in range(2):
        res = r.results(rank)[-1]
        assert res["nfail"] == 0, "\n".join(res["failures"])
