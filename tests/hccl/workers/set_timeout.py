"""Lowering a live hccl group's timeout, 2 ranks: torch 2.13's private
_set_pg_timeout does not reach a plugin backend (it warns, in torch's words); the public
ProcessGroup.set_timeout does. Rank 1 then never joins an all_reduce: rank 0's fails after the
new 3 s, not the 120 s the group was created with."""
import os
import time
import warnings
from datetime import timedelta

import torch
import torch.distributed as dist
from common import RANK, init, report

init(timeout=timedelta(seconds=120))
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
if RANK == 0:
    t0, error = time.monotonic(), None
    try:
        dist.all_reduce(x)
        torch.npu.synchronize()
    except Exception as e:
        error = f"{type(e).__name__}: {e}"
    report(kind="timeout", seconds=time.monotonic() - t0, error=error, private_warnings=private_warnings)
else:
    report(kind="timeout", private_warnings=private_warnings)
    time.sleep(30)  # never joins; stays alive past rank 0's timeout
os._exit(0)  # the group is unusable after a timeout: no destroy_process_group
