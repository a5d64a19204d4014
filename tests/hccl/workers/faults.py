"""Failures that break a group: argv[1] selects the scenario.

timeout  - rank WORLD-1 never joins an all_reduce; the others time out
           (group timeout 3 s) naming it, and the group stays unusable.
death    - rank WORLD-1 is killed (SIGKILL) before an all_reduce; the others
           fail promptly, long before the 120 s group timeout.
abort    - rank 0 aborts the group while the others wait in all_reduce.
connect  - rank WORLD-1 never calls new_group; the others' setup fails after
           HCCL_CONNECT_TIMEOUT (set to 3 s by the test) naming it.
"""
import datetime
import os
import signal
import sys
import time

import torch
import torch.distributed as dist
from common import RANK, WORLD, init, report

scenario = sys.argv[1]
DEV = "npu"
timeout = datetime.timedelta(seconds=3 if scenario == "timeout" else 120)
init(timeout=timeout)
x = torch.ones(8, device=DEV)
dist.all_reduce(x)  # the group works
last = WORLD - 1
t0 = time.monotonic()
err = None
try:
    if scenario == "timeout":
        if last != RANK:
            dist.all_reduce(x)
        else:
            time.sleep(6)
    elif scenario == "death":
        if last == RANK:
            os.kill(os.getpid(), signal.SIGKILL)
        dist.all_reduce(x)
    elif scenario == "connect":
        if last != RANK:
            dist.new_group(list(range(WORLD)))
        else:
            time.sleep(6)
    elif scenario == "abort":
        if RANK == 0:
            time.sleep(1.0)
            dist.group.WORLD._get_backend(torch.device(DEV)).abort()
        else:
            dist.all_reduce(x)
    torch.npu.synchronize()
except Exception as e:  # noqa: BLE001 - the error text is the result
    err = f"{type(e).__name__}: {e}"
elapsed = time.monotonic() - t0
after = None
try:
    dist.all_reduce(torch.ones(2, device=DEV))
    torch.npu.synchronize()
except Exception as e:  # noqa: BLE001  (the error is the reported result)
    after = f"{type(e).__name__}: {e}"
report(rank=RANK, error=err, elapsed=elapsed, after=after)
os._exit(0)  # the group is broken: skip destroy_process_group's collectives
