"""Random interleaved collectives of different ops, sizes and dtypes, sync and
async, on the default and a side stream; every result checked.

argv: iterations seed
"""
import random
import sys

import torch
import torch.distributed as dist
from common import RANK, WORLD, Checker, init, make

iters, seed = int(sys.argv[1]), int(sys.argv[2])
rng = random.Random(seed)  # same stream on every rank: same op sequence
chk = Checker()
init()
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
