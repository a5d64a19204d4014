"""Rank 1 never creates the group (it sleeps, then exits); rank 0's init_process_group(timeout=3 s)
with device_id (eager setup) reports how long it waited and what it raised (breaker's finding)."""
import datetime
import os
import time

import torch
import torch.distributed as dist

from common import RANK, report

torch.npu.set_device(RANK)
t0 = time.monotonic()
if RANK == 1:
    time.sleep(8)
    os._exit(0)
err = None
try:
    dist.init_process_group("hccl", device_id=torch.device("npu", RANK), timeout=datetime.timedelta(seconds=3))
    x = torch.ones(2, device="npu")
    dist.all_reduce(x)
    torch.npu.synchronize()
except Exception as e:  # noqa: BLE001 - the error is the result
    err = f"{type(e).__name__}: {e}"
report(case="setup", error=err, seconds=time.monotonic() - t0)
os._exit(0)
