"""c10d semantics that PyTorch's distributed suite checks, on 2 and 3 ranks:
all_gather_coalesced in c10d's layout, recv from any source (tags, irecv, npu, sizes
above a chunk), and the behaviours the suite runs only for BACKEND == "gloo"
(all_reduce_coalesced ops, also on a group of some ranks, object collectives, get_future
chains, batch_isend_irecv with tags, a group's timeout, DDP gradient accumulation under
no_sync with and without comm hooks and gradient_as_bucket_view, on cpu and npu). Values are compared bitwise where the result is pure data
movement or a fixed-order reduction (``c10d_semantics_on_rank``)."""
import contextlib
import copy
import datetime
import os
import sys
import time
import warnings
from datetime import timedelta

import pytest
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

from npudist.testing import rank as rank_setup
from npudist.testing.checks import report
from npudist.testing.rank import deterministic_input as make

from . import CPU_AND_NPU, Checker, run_ranks


def c10d_semantics_on_rank(*argv):
    """c10d semantics PyTorch's distributed suite exercises: all_gather_coalesced
    in c10d's layout, recv from any source, per-collective timeouts, and what the suite runs only
    for Gloo (all_reduce_coalesced, object collectives, futures, DDP no_sync); bitwise value
    checks where the result is data movement or a fixed-order reduction.

    Runs on any world size >= 2 (the tag check needs >= 3). With the argument "remote" (every
    rank on its own simulated host) only recv from any source runs, through Gloo."""
    RANK, WORLD = rank_setup.rank(), rank_setup.world_size()
    chk = Checker()
    DEVICES = ["cpu", "npu"]

    REMOTE = "remote" in argv

    def anysource_round(device, dtype, seed):
        """Rank 0 receives one message from every other rank without naming the source."""
        what = f"recv anysource {device} {dtype}"
        if RANK == 0:
            seen = {}
            for _ in range(WORLD - 1):
                buf = torch.empty(1000, dtype=dtype, device=device)
                src = dist.recv(buf)
                seen[src] = buf
            chk.run(what + " sources", lambda: None if sorted(seen) == list(range(1, WORLD))
                    else (_ for _ in ()).throw(AssertionError(sorted(seen))))
            for src, buf in seen.items():
                chk.close(buf, make(src, (1000,), dtype, seed, device), f"{what} from {src}")
        else:
            dist.send(make(RANK, (1000,), dtype, seed, device), 0)
        dist.barrier()

    if REMOTE:
        for device in DEVICES:
            for dtype in (torch.float32, torch.int16):
                anysource_round(device, dtype, 23)
        report(kind="done")
        chk.finish()
        sys.exit(0)

    # ---- all_gather_coalesced: outputs[r][i] receives rank r's inputs[i] (Gloo's layout)
    SHAPES = [(3,), (2, 2), (0,), (4, 1, 3), (0,), (1,), (37,)]
    seed = 100
    for device in DEVICES:
        for dtype in (torch.float32, torch.bfloat16, torch.float64, torch.int64, torch.int8, torch.bool):
            for async_op in (False, True):
                seed += len(SHAPES)
                ins = [make(RANK, s, dtype, seed + i, device) for i, s in enumerate(SHAPES)]
                outs = [[torch.empty(s, dtype=dtype, device=device) for s in SHAPES] for _ in range(WORLD)]
                what = f"all_gather_coalesced {device} {dtype} async={async_op}"

                def run(ins=ins, outs=outs, async_op=async_op):
                    w = dist.all_gather_coalesced(outs, ins, async_op=async_op)
                    if async_op:
                        w.wait()
                chk.run(what, run)
                if device == "npu":
                    torch.npu.synchronize()
                for r in range(WORLD):
                    for i, s in enumerate(SHAPES):
                        # Data movement only: the bits must be exactly the sender's.
                        chk.close(outs[r][i], make(r, s, dtype, seed + i, device), f"{what} out[{r}][{i}]")

    # non-contiguous outputs and inputs; complex (c10d passes their real view)
    ins = [make(RANK, (4, 6), torch.float32, 7, "cpu").t(), make(RANK, (3,), torch.float32, 8, "cpu")]
    outs = [[torch.empty(4, 6).t(), torch.empty(6)[::2]] for _ in range(WORLD)]
    chk.run("all_gather_coalesced non-contiguous", lambda: dist.all_gather_coalesced(outs, ins))
    for r in range(WORLD):
        chk.close(outs[r][0], make(r, (4, 6), torch.float32, 7, "cpu").t(), f"non-contiguous out[{r}][0]")
        chk.close(outs[r][1], make(r, (3,), torch.float32, 8, "cpu"), f"non-contiguous out[{r}][1]")
    cin = [torch.complex(make(RANK, (5,), torch.float32, 9, "cpu"), make(RANK, (5,), torch.float32, 10, "cpu"))]
    couts = [[torch.empty(5, dtype=torch.complex64)] for _ in range(WORLD)]
    chk.run("all_gather_coalesced complex", lambda: dist.all_gather_coalesced(couts, cin))
    for r in range(WORLD):
        want = torch.complex(make(r, (5,), torch.float32, 9, "cpu"), make(r, (5,), torch.float32, 10, "cpu"))
        chk.close(torch.view_as_real(couts[r][0]), torch.view_as_real(want), f"complex out[{r}]")

    # A wrong layout (one output list per input, as before the fix) is a clear ValueError
    # on every rank, and the group keeps working.
    def wrong_layout():
        bad_outs = [[torch.empty(3) for _ in range(WORLD)] for _ in range(WORLD + 1)]
        try:
            dist.all_gather_coalesced(bad_outs, [torch.ones(3)] * (WORLD + 1))
        except ValueError as e:
            assert "one output list per rank" in str(e), str(e)
        except dist.DistBackendError as e:  # a peer's rejection reaches ranks that passed checks
            assert "invalid input" in str(e) or "one output list per rank" in str(e), str(e)
        else:
            raise AssertionError("no error for a wrong all_gather_coalesced layout")
    chk.run("all_gather_coalesced wrong layout", wrong_layout)
    after = torch.ones(2)
    chk.run("all_reduce after a rejected layout", lambda: dist.all_reduce(after))
    chk.close(after, torch.full((2,), float(WORLD)), "all_reduce after a rejected layout")

    # ---- recv from any source: rank 0 receives one message from every other rank
    for device in DEVICES:
        for dtype in (torch.float32, torch.float16, torch.int32, torch.uint8):
            anysource_round(device, dtype, 21)

    # larger than a p2p chunk (512 KiB), irecv without src, Work._source_rank()
    if RANK == 0:
        bufs, works = [], []
        for _ in range(WORLD - 1):
            b = torch.empty(300_000, dtype=torch.float32)
            bufs.append(b)
            works.append(dist.irecv(b))
        for b, w in zip(bufs, works):
            w.wait()
            src = w._source_rank()
            chk.close(b, make(src, (300_000,), torch.float32, 22, "cpu"), f"irecv anysource (large) from {src}")
    else:
        dist.send(make(RANK, (300_000,), torch.float32, 22, "cpu"), 0)
    dist.barrier()

    # a non-contiguous receive buffer
    if RANK == 1:
        dist.send(torch.arange(12, dtype=torch.float32), 0)
    elif RANK == 0:
        nc = torch.zeros(4, 3).t()
        src = dist.recv(nc)
        chk.close(nc.contiguous().reshape(-1), torch.arange(12, dtype=torch.float32), "recv anysource non-contiguous")
        chk.run("recv anysource non-contiguous source", lambda: None if src == 1 else (_ for _ in ()).throw(AssertionError(src)))
    dist.barrier()

    # tags: an any-source receive with tag 0 does not take rank 1's tag-5 message
    if WORLD >= 3:
        if RANK == 1:
            dist.send(torch.full((4,), 5.0), 0, tag=5)
        elif RANK == 2:
            time.sleep(0.3)  # rank 1's message is there first
            dist.send(torch.full((4,), 2.0), 0, tag=0)
        elif RANK == 0:
            a = torch.empty(4)
            src = dist.recv(a, tag=0)
            chk.close(a, torch.full((4,), 2.0), "anysource tag 0 payload")
            chk.run("anysource tag 0 source", lambda: None if src == 2 else (_ for _ in ()).throw(AssertionError(src)))
            b = torch.empty(4)
            dist.recv(b, src=1, tag=5)
            chk.close(b, torch.full((4,), 5.0), "recv src=1 tag 5 after anysource")
        dist.barrier()

    # ---- behaviours the suite runs only when BACKEND == "gloo" (docs/collectives.md)
    # all_reduce_coalesced with SUM/PRODUCT/MIN/MAX over mixed dtypes, bitwise against a local reduction
    for op, fold in ((dist.ReduceOp.SUM, torch.add), (dist.ReduceOp.PRODUCT, torch.mul),
                     (dist.ReduceOp.MIN, torch.minimum), (dist.ReduceOp.MAX, torch.maximum)):
        for device, dt in (("cpu", torch.float32), ("npu", torch.float64), ("cpu", torch.int64), ("npu", torch.bfloat16)):
            # c10d requires one dtype per call
            shapes_dtypes = [((7,), dt), ((2, 3), dt), ((5,), dt), ((0,), dt), ((100_000,), dt)]
            ts = [make(RANK, sh, dt, 300 + i, device, kind="product") for i, (sh, dt) in enumerate(shapes_dtypes)]
            what = f"all_reduce_coalesced {op} {device} {dt}"
            chk.run(what, lambda ts=ts, op=op: dist.all_reduce_coalesced(ts, op=op))
            for i, (sh, dt) in enumerate(shapes_dtypes):
                want = make(0, sh, dt, 300 + i, "cpu", kind="product")
                for r in range(1, WORLD):  # rank order, as hccl reduces
                    want = fold(want, make(r, sh, dt, 300 + i, "cpu", kind="product"))
                chk.close(ts[i].reshape(-1), want.reshape(-1), f"{what} tensor {i}")

    # object collectives (all_gather_object, gather_object, scatter_object_list, broadcast_object_list)
    objs = [{"rank": r, "payload": list(range(r + 3)), "t": torch.arange(3) + r} for r in range(WORLD)]
    got = [None] * WORLD
    chk.run("all_gather_object", lambda: dist.all_gather_object(got, objs[RANK]))
    chk.run("all_gather_object values", lambda: None if all(str(g) == str(o) for g, o in zip(got, objs))
            else (_ for _ in ()).throw(AssertionError(got)))
    out = [None]
    chk.run("scatter_object_list", lambda: dist.scatter_object_list(out, objs if RANK == 0 else None, src=0))
    chk.run("scatter_object_list value", lambda: None if str(out[0]) == str(objs[RANK])
            else (_ for _ in ()).throw(AssertionError(out)))
    gathered = [None] * WORLD if RANK == 0 else None
    chk.run("gather_object", lambda: dist.gather_object(objs[RANK], gathered, dst=0))
    if RANK == 0:
        chk.run("gather_object values", lambda: None if str(gathered) == str(objs)
                else (_ for _ in ()).throw(AssertionError(gathered)))
    bl = [objs[0], "x"] if RANK == 0 else [None, None]
    chk.run("broadcast_object_list", lambda: dist.broadcast_object_list(bl, src=0))
    chk.run("broadcast_object_list value", lambda: None if str(bl) == str([objs[0], "x"])
            else (_ for _ in ()).throw(AssertionError(bl)))

    # get_future: then() chains on an async all_reduce (the suite's test_get_future)
    def future_chain():
        t = torch.full((4,), float(RANK + 1))
        fut = dist.all_reduce(t, async_op=True).get_future()
        res = fut.then(lambda f: [x * 3 for x in f.value()]).then(lambda f: [x + 1 for x in f.value()]).wait()
        total = sum(range(1, WORLD + 1))
        assert torch.equal(res[0], torch.full((4,), float(total * 3 + 1))), res
    chk.run("get_future then chain", future_chain)

    # A synchronous collective that ran on the caller's thread keeps only weak references to
    # its tensors once done (recycled Works): its Work still gives them while they are alive.
    def sync_work_result():
        pg = dist.distributed_c10d._get_default_group()
        total = float(sum(range(1, WORLD + 1)))
        for device in DEVICES:
            t = torch.full((4,), float(RANK + 1), device=device)
            opts = dist.AllreduceOptions()
            opts.asyncOp = False
            w = pg.allreduce([t], opts)
            w.wait()
            res = w.result()
            assert len(res) == 1 and res[0].data_ptr() == t.data_ptr(), (device, res)
            assert torch.equal(res[0].cpu(), torch.full((4,), total)), (device, res)
            val = w.get_future().value()
            assert len(val) == 1 and val[0].data_ptr() == t.data_ptr(), (device, val)
    chk.run("synchronous Work result and future", sync_work_result)

    # batch_isend_irecv with tags, every rank with every other (the suite's test_batch_isend_irecv_gloo_tags)
    def batch_tags():
        ops, recvs = [], {}
        for peer in range(WORLD):
            if peer == RANK:
                continue
            ops.append(dist.P2POp(dist.isend, make(RANK, (64,), torch.float32, 400 + peer, "cpu"), peer, tag=peer))
            recvs[peer] = torch.empty(64)
            ops.append(dist.P2POp(dist.irecv, recvs[peer], peer, tag=RANK))
        for w in dist.batch_isend_irecv(ops):
            w.wait()
        for peer, buf in recvs.items():
            chk.close(buf, make(peer, (64,), torch.float32, 400 + RANK, "cpu"), f"batch_isend_irecv tags from {peer}")
    chk.run("batch_isend_irecv tags", batch_tags)

    # all_reduce_coalesced on a group of some ranks (the suite's test_all_reduce_coalesced_group_*:
    # ranks [1, 2]); ranks outside it do nothing.
    if WORLD >= 3:
        part = [1, 2]
        sub = dist.new_group(part)
        if RANK in part:
            ts = [make(RANK, (9,), torch.float32, 350 + i, "cpu") for i in range(3)]
            chk.run("all_reduce_coalesced on ranks [1, 2]", lambda: dist.all_reduce_coalesced(ts, group=sub))
            for i in range(3):
                want = make(1, (9,), torch.float32, 350 + i, "cpu") + make(2, (9,), torch.float32, 350 + i, "cpu")
                chk.close(ts[i], want, f"all_reduce_coalesced on ranks [1, 2] tensor {i}")
        dist.barrier()

    # DDP gradient accumulation with no_sync (the suite's test_accumulate_gradients_no_sync*, run
    # there only for mpi/gloo on cpu): a model on the whole batch and DDP on one row per rank; under
    # no_sync the gradients stay local (differ from the model's), after a synced step they match.
    class SuiteNet(torch.nn.Module):
        """The suite's Net: small buckets over several layers, one integer parameter without grad."""

        def __init__(self):
            super().__init__()
            self.fc1 = torch.nn.Linear(2, 10, bias=False)
            self.fc2 = torch.nn.Linear(10, 50)
            self.fc3 = torch.nn.Linear(50, 4, bias=False)
            self.no_grad_param = torch.nn.Parameter(torch.tensor([2, 2]), requires_grad=False)

        def forward(self, x):
            return torch.softmax(self.fc3(torch.relu(self.fc2(torch.relu(self.fc1(x))))), dim=1)

    def hook_allreduce(group, bucket):
        return group.allreduce([bucket.buffer() / WORLD]).get_future().then(lambda f: f.value()[0])

    def hook_then_chain(group, bucket):
        fut = group.allreduce([bucket.buffer()]).get_future()
        return fut.then(lambda f: 2 * f.wait()[0]).then(lambda f: f.wait() / (2 * WORLD))

    def ddp_no_sync(device, hook, as_view, iters=4):
        from torch.nn.parallel import DistributedDataParallel as DDP
        torch.manual_seed(5)
        model = SuiteNet().to(device)
        ddp = DDP(copy.deepcopy(model), bucket_cap_mb=0.001, gradient_as_bucket_view=as_view,
                  device_ids=[torch.npu.current_device()] if device == "npu" else None)
        if hook is not None:
            ddp.register_comm_hook(dist.group.WORLD, hook)
        x, y = torch.randn(WORLD, 2).to(device), torch.randn(WORLD, 4).to(device)
        with torch.no_grad(), ddp.no_sync():  # no grads under no_grad, and no collective either
            ddp(x[RANK:RANK + 1])
        assert all(p.grad is None for p in ddp.parameters()), "no_grad forward under no_sync left gradients"
        for it in range(iters):
            torch.nn.functional.mse_loss(model(x), y).backward()
            ctx = ddp.no_sync() if it % 2 == 0 else contextlib.nullcontext()
            with ctx:
                torch.nn.functional.mse_loss(ddp(x[RANK:RANK + 1]), y[RANK:RANK + 1]).backward()
            for (name, a), b in zip(model.named_parameters(), ddp.parameters()):
                if not a.requires_grad:
                    continue
                diff = float((a.grad - b.grad).abs().max())
                if it % 2 == 0:
                    assert diff > 0, f"iteration {it} (no_sync): {name} gradient was synchronised"
                else:
                    assert torch.allclose(a.grad, b.grad, rtol=1e-5, atol=1e-6), f"iteration {it}: {name} differs by {diff}"
            torch.manual_seed(1337 + it)  # the same permutation on every rank
            perm = torch.randperm(WORLD)
            x, y = x[perm.to(device)], y[perm.to(device)]

    for device in DEVICES:
        for label, hook, as_view in (("plain", None, False), ("gradient_as_bucket_view", None, True),
                                     ("allreduce hook", hook_allreduce, False), ("then-chain hook", hook_then_chain, False)):
            chk.run(f"DDP no_sync accumulation {device} {label}", ddp_no_sync, device, hook, as_view)

    # the suite's test_grads_same_across_ranks_with_no_sync: find_unused_parameters with a different
    # parameter subset per rank and micro-batch; after the synced micro-batch every rank holds the
    # same gradients for all four layers.
    def grads_same_with_no_sync():
        from torch.nn.parallel import DistributedDataParallel as DDP

        class Conditional(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.nn = torch.nn.ModuleList(torch.nn.Linear(1, 1) for _ in range(4))
                self.state = 0

            def forward(self, x):
                i = (0 if RANK == 0 else 2) + self.state
                self.state ^= 1
                return self.nn[i](x)

        torch.manual_seed(7)
        model = DDP(Conditional(), find_unused_parameters=True)
        torch.manual_seed(100 + RANK)
        for micro in range(2):
            with model.no_sync() if micro == 0 else contextlib.nullcontext():
                torch.nn.functional.mse_loss(model(torch.rand(1)), torch.rand(1)).backward()
        assert all(p.grad is not None for p in model.parameters()), "a gradient is None"
        grads = torch.cat([p.grad.view(-1) for p in model.parameters()])
        everyone = [torch.empty_like(grads) for _ in range(WORLD)]
        dist.all_gather(everyone, grads)
        for r in range(1, WORLD):
            assert torch.allclose(everyone[0], everyone[r]), f"rank {r} gradients {everyone[r]} vs rank 0 {everyone[0]}"
    chk.run("DDP grads same across ranks with no_sync", grads_same_with_no_sync)

    # a group's timeout bounds its collectives (the suite's test_barrier_timeout_*): only rank 0
    # calls barrier on a group made with timeout=2 s; it fails with a timeout error naming the
    # ranks that never joined, and the world group keeps working.
    short = dist.new_group(list(range(WORLD)), timeout=datetime.timedelta(seconds=2))
    dist.barrier()
    if RANK == 0:
        def group_timeout():
            t0 = time.monotonic()
            try:
                dist.barrier(group=short)
            except dist.DistBackendError as e:
                assert " timeout " in str(e) or "timed out" in str(e), str(e)
                assert "never joined" in str(e), str(e)
                assert time.monotonic() - t0 >= 1.9, "raised before the group's timeout"
            else:
                raise AssertionError("no timeout")
        chk.run("group timeout", group_timeout)
    dist.barrier()
    w = torch.ones(3)
    chk.run("world all_reduce after a sub-group timeout", lambda: dist.all_reduce(w))
    chk.close(w, torch.full((3,), float(WORLD)), "world all_reduce after a sub-group timeout")

    # a size mismatch is an error naming both sizes
    if RANK == 1:
        dist.send(torch.ones(3), 0)
    elif RANK == 0:
        def mismatch():
            try:
                dist.recv(torch.empty(5))
            except dist.DistBackendError as e:
                assert "sent 3 float32" in str(e) and "expects 5" in str(e), str(e)
            else:
                raise AssertionError("no error for a size mismatch")
        chk.run("recv anysource size mismatch", mismatch)

    report(kind="done")
    chk.finish()


@pytest.mark.timeout(600)
@pytest.mark.parametrize("nranks", [2, 3])
def test_c10d_semantics(nranks):
    r = run_ranks(c10d_semantics_on_rank, nranks, backend=CPU_AND_NPU, timeout=540)
    assert r.returncodes == [0] * nranks, r.explain()
    for i in range(nranks):
        res = r.results(i)[-1]
        assert res["checks"] > 400, res
        assert res["nfail"] == 0, "\n".join(res["failures"])


@pytest.mark.timeout(300)
def test_recv_anysource_across_hosts():
    """Every rank on its own simulated host: recv without src is Gloo's recvAnysource."""
    r = run_ranks(c10d_semantics_on_rank, 3, "remote", backend=CPU_AND_NPU, hosts=["hA", "hB", "hC"], timeout=240)
    assert r.returncodes == [0] * 3, r.explain()
    for i in range(3):
        res = r.results(i)[-1]
        assert res["nfail"] == 0, res
    assert r.results(0)[-1]["checks"] >= 4 * 3, r.results(0)[-1]  # rank 0 receives and checks


def ddp_timer_on_rank():
    """DDP on npu with hccl, a few steps: its logging data's timings (the reducer's npu timer,
    csrc/hccl/ddp_timer.cpp)."""
    torch.manual_seed(0)
    model = DDP(torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.ReLU(), torch.nn.Linear(256, 8)).npu(),
                device_ids=[torch.npu.current_device()], bucket_cap_mb=0.01)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(4):
        x = torch.randn(32, 64, generator=torch.Generator().manual_seed(step * 10 + rank_setup.rank())).npu()
        loss = model(x).square().mean()
        loss.backward()
        opt.step()
        opt.zero_grad()
    data = model._get_ddp_logging_data()
    keys = ("forward_compute_time", "backward_compute_time", "backward_comm_time",
            "backward_compute_comm_overlap_time", "avg_forward_compute_time", "avg_backward_compute_time",
            "avg_backward_comm_time")
    return {"times": {k: data.get(k) for k in keys}, "device": str(data.get("device_ids")),
            "backend": data.get("backend_name")}


def set_timeout_on_rank(done_file):
    """Lowering a live hccl group's timeout, 2 ranks: torch 2.13's private _set_pg_timeout does
    not reach a plugin backend (it warns, in torch's words); the public ProcessGroup.set_timeout
    does. Rank 1 then never joins an all_reduce: rank 0's fails after the new 3 s, not the 120 s
    the group was created with; rank 1 stays alive until rank 0 has reported (``done_file``)."""
    rank_setup.init("hccl", timeout_s=120)
    x = torch.ones(64, device="npu")
    dist.all_reduce(x)
    torch.npu.synchronize()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        dist.distributed_c10d._set_pg_timeout(timedelta(seconds=3))
    private_warnings = [str(w.message) for w in caught]
    dist.group.WORLD.set_timeout(timedelta(seconds=3))  # the public way: reaches ProcessGroupHCCL
    dist.barrier()
    torch.npu.synchronize()
    if rank_setup.rank() == 0:
        t0, error = time.monotonic(), None
        try:
            dist.all_reduce(x)
            torch.npu.synchronize()
        except Exception as e:
            error = f"{type(e).__name__}: {e}"
        report(kind="timeout", seconds=time.monotonic() - t0, error=error, private_warnings=private_warnings)
        open(done_file, "w").close()
    else:
        report(kind="timeout", private_warnings=private_warnings)
        deadline = time.monotonic() + 60  # never joins; stays alive past rank 0's timeout
        while not os.path.exists(done_file) and time.monotonic() < deadline:
            time.sleep(0.1)
    os._exit(0)  # the group is unusable after a timeout: no destroy_process_group


@pytest.mark.timeout(200)
def test_ddp_records_npu_timings():
    # The reducer's timer for npu (c10d TimerRegistry, PrivateUse1; csrc/hccl/ddp_timer.cpp), as torch_npu
    # registers one: DDP's logging data has its timings and DDP does not warn that it cannot time npu.
    r = run_ranks(ddp_timer_on_rank, 2, timeout=150).check()
    for res in r.values():
        times = res["times"]
        assert all(isinstance(v, int) and v > 0 for v in times.values()), times
        # a forward of this size takes well under a second of npu (host) time, in ns
        assert times["forward_compute_time"] < 10 ** 10, times
        assert times["backward_compute_time"] >= times["backward_compute_comm_overlap_time"] >= 0, times
    for err in r.stderr:
        assert "Time stats are currently only collected" not in err, err[-3000:]


@pytest.mark.timeout(200)
def test_public_set_timeout_reaches_hccl(tmp_path):
    r = run_ranks(set_timeout_on_rank, 2, str(tmp_path / "rank0_done"), backend=None, timeout=150)
    assert r.returncodes == [0] * 2, r.explain()
    res = r.results(0)[0]
    # torch 2.13's _set_pg_timeout passes timeouts to NCCL and Gloo only (docs/collectives.md, "Timeouts")
    assert any("only supported for either nccl or gloo" in w for w in res["private_warnings"]), res
    assert res["error"] is not None and "collective timeout" in res["error"], res
    assert "group.set_timeout(...)" in res["error"], res  # the timeout error names the public way to change it
    assert res["seconds"] < 60, res  # the lowered 3 s, not the 120 s the group began with
