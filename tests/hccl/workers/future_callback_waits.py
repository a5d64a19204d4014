"""A Python callback on a collective's future (get_future().then(fn)) plus a stream-ordered wait and a
GIL-holding wait (storage resize_), with the peer arriving late. This deadlocked when the group's thread
ran the callback (which takes the GIL) before the collective counted as done; now the future completes
right after."""
import time

import torch
import torch.distributed as dist
from common import RANK, Checker, init

chk = Checker()
init()
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
