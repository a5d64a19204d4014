"""Bad input on one long-lived group: each case must raise on every rank (or
on the rank that is wrong, for point-to-point), and the group must keep
working afterwards. Reports one RESULT line per case with the error text."""
import datetime
import time

import torch
import torch.distributed as dist
from common import RANK, WORLD, init, report

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


init(timeout=datetime.timedelta(seconds=60))
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
