"""Every hccl collective x dtype x size against a local reference, on world
sizes 1-4, with cross-rank bitwise equality of the all_reduce results.

HCCL_BUFFSIZE=1 (512 KiB staging slots) makes the larger sizes take the
chunked, pipelined paths as well as the one-shot path.
"""
import hashlib
import sys

import pytest
import torch
import torch.distributed as dist

from npudist.testing import rank as rank_setup
from npudist.testing.rank import deterministic_input as make

from . import ALL_DTYPES, CPU_AND_NPU, Checker, run_ranks


def matrix_on_rank(*argv):
    """Every collective x dtype x size on one long-lived group, checked against a
    reference each rank computes from every rank's (deterministic) inputs.

    argv: [quick]  - "quick" trims sizes for the default tier."""
    RANK, WORLD = rank_setup.rank(), rank_setup.world_size()
    R = dist.ReduceOp
    quick = len(argv) > 0 and argv[0] == "quick"
    SIZES = [0, 1, 7, 1025, 70001] + ([] if quick else [300001])
    BIG_DTYPES = {torch.float32, torch.bfloat16, torch.int64, torch.bool}
    DEV = "npu"
    chk = Checker()
    digests = []

    def reduce_ref(inputs, op, dtype, factors=None):
        if dtype == torch.bool:
            s = torch.stack([i.cpu() for i in inputs])
            return s.any(0) if op in (R.SUM, R.MAX) else s.all(0)
        x = torch.stack([i.cpu().double() if dtype.is_floating_point else i.cpu().long() for i in inputs])
        if op == R.SUM:
            r = x.sum(0)
        elif op == R.AVG:
            r = x.sum(0) / len(inputs)
        elif op == R.PRODUCT:
            r = x.prod(0)
        elif op == R.MIN:
            r = x.min(0).values
        elif op == R.MAX:
            r = x.max(0).values
        else:  # premul: each rank's scaled input is rounded to the dtype first
            r = sum((x[i] * factors[i]).to(dtype).double() for i in range(len(inputs)))
        return r.to(dtype)

    def ops_for(dtype):
        if dtype.is_floating_point:
            return [R.SUM, R.AVG, R.PRODUCT, R.MIN, R.MAX, "premul"]
        return [R.SUM, R.PRODUCT, R.MIN, R.MAX]

    def digest(t):
        return hashlib.sha1(t.cpu().contiguous().view(torch.uint8).numpy().tobytes()).hexdigest()[:16]

    def check_dtype_size(dtype, n, seed):
        tag = f"{dtype} n={n}"
        # all_reduce with every applicable op
        for op in ops_for(dtype):
            kind = "product" if op == R.PRODUCT else "any"
            ins = [make(r, (n,), dtype, seed, DEV, kind) for r in range(WORLD)]
            x = ins[RANK].clone()
            if op == "premul":
                factors = [0.5 + r for r in range(WORLD)]
                dop = dist._make_nccl_premul_sum(factors[RANK])
                chk.run(f"all_reduce premul {tag}", lambda: dist.all_reduce(x, op=dop))
                chk.close(x, reduce_ref(ins, op, dtype, factors), f"all_reduce PREMUL_SUM {tag}")
            else:
                chk.run(f"all_reduce {op} {tag}", lambda: dist.all_reduce(x, op=op))
                chk.close(x, reduce_ref(ins, op, dtype), f"all_reduce {op} {tag}")
            if op == R.SUM:
                digests.append(digest(x))
                y = ins[RANK].clone()
                dist.all_reduce(y)
                chk.close(y.view(torch.uint8) if y.dtype != torch.bool else y, x.view(torch.uint8) if x.dtype != torch.bool else x,
                          f"all_reduce repeatable {tag}")
        ins = [make(r, (n,), dtype, seed + 1, DEV) for r in range(WORLD)]
        # broadcast
        root = WORLD - 1
        x = ins[RANK].clone()
        chk.run(f"broadcast {tag}", lambda: dist.broadcast(x, src=root))
        chk.close(x, ins[root], f"broadcast {tag}")
        # reduce
        x = ins[RANK].clone()
        chk.run(f"reduce {tag}", lambda: dist.reduce(x, dst=0, op=R.MAX))
        chk.close(x, reduce_ref(ins, R.MAX, dtype) if RANK == 0 else ins[RANK], f"reduce MAX {tag}")
        # all_gather (list) and into a tensor
        outs = [torch.empty(n, dtype=dtype, device=DEV) for _ in range(WORLD)]
        chk.run(f"all_gather {tag}", lambda: dist.all_gather(outs, ins[RANK]))
        for r in range(WORLD):
            chk.close(outs[r], ins[r], f"all_gather[{r}] {tag}")
        flat = torch.empty(n * WORLD, dtype=dtype, device=DEV)
        chk.run(f"all_gather_into_tensor {tag}", lambda: dist.all_gather_into_tensor(flat, ins[RANK]))
        chk.close(flat, torch.cat(ins), f"all_gather_into_tensor {tag}")
        # reduce_scatter: list and tensor forms
        full = [make(r, (n * WORLD,), dtype, seed + 2, DEV) for r in range(WORLD)]
        out = torch.empty(n, dtype=dtype, device=DEV)
        chk.run(f"reduce_scatter_tensor {tag}", lambda: dist.reduce_scatter_tensor(out, full[RANK]))
        want = reduce_ref(full, R.SUM, dtype)[RANK * n:(RANK + 1) * n]
        chk.close(out, want, f"reduce_scatter_tensor SUM {tag}")
        if dtype.is_floating_point:
            chk.run(f"reduce_scatter_tensor avg {tag}", lambda: dist.reduce_scatter_tensor(out, full[RANK], op=R.AVG))
            chk.close(out, reduce_ref(full, R.AVG, dtype)[RANK * n:(RANK + 1) * n], f"reduce_scatter_tensor AVG {tag}")
        out2 = torch.empty(n, dtype=dtype, device=DEV)
        chk.run(f"reduce_scatter {tag}", lambda: dist.reduce_scatter(out2, list(full[RANK].chunk(WORLD)) if n else
                                                                     [full[RANK]] * WORLD, op=R.MIN))
        chk.close(out2, reduce_ref(full, R.MIN, dtype)[RANK * n:(RANK + 1) * n], f"reduce_scatter MIN {tag}")
        # all_to_all_single, even then uneven splits
        src = [make(r, (n * WORLD,), dtype, seed + 3, DEV) for r in range(WORLD)]
        dst = torch.empty(n * WORLD, dtype=dtype, device=DEV)
        chk.run(f"all_to_all_single {tag}", lambda: dist.all_to_all_single(dst, src[RANK]))
        chk.close(dst, torch.cat([src[r][RANK * n:(RANK + 1) * n] for r in range(WORLD)]), f"all_to_all_single {tag}")
        m = n // 3

        def split(i, j):
            return ((i + 2 * j) % 3) * m

        usrc = [make(r, (sum(split(r, j) for j in range(WORLD)),), dtype, seed + 4, DEV) for r in range(WORLD)]
        udst = torch.empty(sum(split(i, RANK) for i in range(WORLD)), dtype=dtype, device=DEV)
        chk.run(f"all_to_all_single uneven {tag}", lambda: dist.all_to_all_single(
            udst, usrc[RANK], output_split_sizes=[split(i, RANK) for i in range(WORLD)],
            input_split_sizes=[split(RANK, j) for j in range(WORLD)]))
        pieces = []
        for i in range(WORLD):
            off = sum(split(i, j) for j in range(RANK))
            pieces.append(usrc[i][off:off + split(i, RANK)])
        chk.close(udst, torch.cat(pieces), f"all_to_all_single uneven {tag}")
        # all_to_all with lists
        lin = [src[RANK][j * n:(j + 1) * n] for j in range(WORLD)]
        lout = [torch.empty(n, dtype=dtype, device=DEV) for _ in range(WORLD)]
        chk.run(f"all_to_all {tag}", lambda: dist.all_to_all(lout, lin))
        for i in range(WORLD):
            chk.close(lout[i], src[i][RANK * n:(RANK + 1) * n], f"all_to_all[{i}] {tag}")
        # gather / scatter
        glist = [torch.empty(n, dtype=dtype, device=DEV) for _ in range(WORLD)] if RANK == 0 else None
        chk.run(f"gather {tag}", lambda: dist.gather(ins[RANK], glist, dst=0))
        if RANK == 0:
            for r in range(WORLD):
                chk.close(glist[r], ins[r], f"gather[{r}] {tag}")
        sroot = WORLD - 1
        sout = torch.empty(n, dtype=dtype, device=DEV)
        slist = [ins[r] for r in range(WORLD)] if sroot == RANK else None
        chk.run(f"scatter {tag}", lambda: dist.scatter(sout, slist, src=sroot))
        chk.close(sout, ins[RANK], f"scatter {tag}")
        # point-to-point: a ring with batch_isend_irecv, then ordered send/recv
        if WORLD > 1:
            nxt, prv = (RANK + 1) % WORLD, (RANK - 1) % WORLD
            rbuf = torch.empty(n, dtype=dtype, device=DEV)

            def ring():
                reqs = dist.batch_isend_irecv([dist.P2POp(dist.isend, ins[RANK], nxt), dist.P2POp(dist.irecv, rbuf, prv)])
                for q in reqs:
                    q.wait()

            chk.run(f"batch_isend_irecv {tag}", ring)
            chk.close(rbuf, ins[prv], f"batch_isend_irecv {tag}")
            rbuf2 = torch.empty(n, dtype=dtype, device=DEV)

            def ordered():
                if RANK % 2 == 0:
                    dist.send(ins[RANK], nxt)
                    dist.recv(rbuf2, prv)
                else:
                    dist.recv(rbuf2, prv)
                    dist.send(ins[RANK], nxt)

            chk.run(f"send/recv {tag}", ordered)
            chk.close(rbuf2, ins[prv], f"send/recv {tag}")

    def check_semantics(seed):
        n = 4099
        ins = [make(r, (n,), torch.float32, seed, DEV) for r in range(WORLD)]
        want = reduce_ref(ins, R.SUM, torch.float32)
        # async_op: Work.wait, is_completed, the future
        x = ins[RANK].clone()
        w = dist.all_reduce(x, async_op=True)
        chk.run("async wait", lambda: w.wait())
        chk.close(x, want, "async all_reduce")
        torch.npu.synchronize()
        chk.run("is_completed", lambda: (_ for _ in ()).throw(AssertionError("not completed")) if not w.is_completed() else None)
        y = ins[RANK].clone()
        fut = dist.all_reduce(y, async_op=True).get_future()
        res = fut.then(lambda f: f.value()[0] * 2).wait()
        chk.close(res, want * 2, "future.then")
        # A synchronous collective runs at once on this thread and makes its future
        # only when asked (the latency path): through the ProcessGroup API, which
        # returns the Work of an asyncOp=False collective.
        v = ins[RANK].clone()
        opts = dist.AllreduceOptions()
        opts.asyncOp = False
        w_sync = dist.group.WORLD.allreduce([v], opts)
        chk.run("sync wait", lambda: w_sync.wait())
        chk.close(w_sync.get_future().wait()[0], want, "sync all_reduce future value")
        chk.close(w_sync.result()[0], want, "sync all_reduce result()")
        chk.run("sync future done", lambda: None if w_sync.get_future().done() and w_sync.get_future() is not None
                else (_ for _ in ()).throw(AssertionError("future not done")))
        chk.close(v, want, "sync all_reduce")
        # on a side stream, consumed on the current stream after wait()
        s = torch.npu.Stream()
        z = ins[RANK].clone()
        with torch.npu.stream(s):
            w2 = dist.all_reduce(z, async_op=True)
        w2.wait()
        chk.close(z + 0, want, "side-stream all_reduce")
        # non-contiguous input and output
        m = make(RANK, (33, 65), torch.float32, seed + 9, DEV).t()
        ref_nc = reduce_ref([make(r, (33, 65), torch.float32, seed + 9, DEV).t() for r in range(WORLD)], R.SUM, torch.float32)
        chk.run("non-contiguous all_reduce", lambda: dist.all_reduce(m))
        chk.close(m, ref_nc, "non-contiguous all_reduce")
        outs = torch.empty(WORLD * 65, 33, device=DEV)
        src = make(RANK, (33, 65), torch.float32, seed + 10, DEV).t()
        chk.run("non-contiguous all_gather", lambda: dist.all_gather_into_tensor(outs, src))
        chk.close(outs, torch.cat([make(r, (33, 65), torch.float32, seed + 10, DEV).t() for r in range(WORLD)]),
                  "non-contiguous all_gather_into_tensor")
        # cpu tensors on the same group
        for dtype in (torch.float32, torch.int64, torch.bfloat16):
            c = make(RANK, (1000,), dtype, seed + 11, "cpu")
            chk.run(f"cpu all_reduce {dtype}", lambda: dist.all_reduce(c))
            chk.close(c, reduce_ref([make(r, (1000,), dtype, seed + 11, "cpu") for r in range(WORLD)], R.SUM, dtype),
                      f"cpu all_reduce {dtype}")
            co = [torch.empty(1000, dtype=dtype) for _ in range(WORLD)]
            src_c = make(RANK, (1000,), dtype, seed + 12, "cpu")
            chk.run(f"cpu all_gather {dtype}", lambda: dist.all_gather(co, src_c))
            for r in range(WORLD):
                chk.close(co[r], make(r, (1000,), dtype, seed + 12, "cpu"), f"cpu all_gather {dtype}")
        # coalescing manager (FSDP/DDP style): two all_reduces as one
        a, b = ins[RANK].clone(), ins[RANK][:100].clone()
        with dist._coalescing_manager(device=torch.device("npu", torch.npu.current_device()), async_ops=True) as cm:
            dist.all_reduce(a)
            dist.all_reduce(b)
        cm.wait()
        chk.close(a, want, "coalesced all_reduce a")
        chk.close(b, want[:100], "coalesced all_reduce b")
        # object collectives (DCP uses them)
        objs = [None] * WORLD
        chk.run("all_gather_object", lambda: dist.all_gather_object(objs, {"rank": RANK}))
        chk.run("all_gather_object value", lambda: None if objs == [{"rank": r} for r in range(WORLD)] else (_ for _ in ()).throw(AssertionError(str(objs))))
        lst = [f"from{WORLD - 1}"] if RANK == WORLD - 1 else [None]
        chk.run("broadcast_object_list", lambda: dist.broadcast_object_list(lst, src=WORLD - 1))
        chk.run("broadcast_object_list value", lambda: None if lst == [f"from{WORLD - 1}"] else (_ for _ in ()).throw(AssertionError(str(lst))))
        chk.run("barrier", lambda: dist.barrier())

    if __import__("os").environ.get("MATRIX_PROFILE") and RANK == 0:
        import atexit
        import cProfile
        import pstats
        prof = cProfile.Profile()
        prof.enable()
        atexit.register(lambda: (prof.disable(), pstats.Stats(prof, stream=sys.stderr).sort_stats("tottime").print_stats(12)))
    seed = 1
    for dtype in ALL_DTYPES:
        for n in SIZES:
            if n > 100000 and dtype not in BIG_DTYPES:
                continue
            seed += 10
            check_dtype_size(dtype, n, seed)
    check_semantics(7)
    torch.npu.synchronize()
    chk.report(digests=digests)
    dist.destroy_process_group()


ENV = {"HCCL_BUFFSIZE": "1"}


def _check(nranks, quick):
    r = run_ranks(matrix_on_rank, nranks, *(["quick"] if quick else []), backend=CPU_AND_NPU, env=ENV, timeout=600)
    assert r.returncodes == [0] * nranks, r.explain()
    results = [r.results(i)[-1] for i in range(nranks)]
    for res in results:
        assert res["checks"] > 500, res
        assert res["nfail"] == 0, "\n".join(res["failures"])
    # Every rank received bitwise-identical all_reduce results.
    assert all(res["digests"] == results[0]["digests"] for res in results)


@pytest.mark.timeout(600)
@pytest.mark.parametrize("nranks", [1, 2, 3, 4])
def test_matrix(nranks):
    _check(nranks, quick=True)


@pytest.mark.slow
@pytest.mark.timeout(1200)
@pytest.mark.parametrize("nranks", [2, 4])
def test_matrix_full_sizes(nranks):
    _check(nranks, quick=False)


@pytest.mark.timeout(600)
@pytest.mark.parametrize("hosts", [["hA", "hA", "hB", "hB"], ["hA", "hB", "hA", "hB"]], ids=["blocked", "interleaved"])
def test_two_simulated_hosts(hosts):
    """NPUDIST_HOSTNAME splits the ranks over two "hosts": shared memory within
    each, Gloo between the host leaders. Per-host rounding of float16/bfloat16
    partial sums is allowed for by a wider tolerance."""
    env = dict(ENV, MATRIX_TOL_SCALE="4")
    r = run_ranks(matrix_on_rank, 4, "quick", backend=CPU_AND_NPU, env=env, hosts=hosts, timeout=600)
    assert r.returncodes == [0] * 4, r.explain()
    results = [r.results(i)[-1] for i in range(4)]
    for res in results:
        assert res["nfail"] == 0, "\n".join(res["failures"])
    assert all(res["digests"] == results[0]["digests"] for res in results)
