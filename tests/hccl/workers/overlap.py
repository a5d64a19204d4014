"""Collectives overlap compute: an async_op=True all_reduce and an all_gather
issued on a side stream (as FSDP2 prefetches) complete in the background
while this thread computes, without anyone waiting for them."""
import time

import torch
import torch.distributed as dist
from common import RANK, WORLD, Checker, init

chk = Checker()
init()
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
