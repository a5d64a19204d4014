"""Rank 0 hosts the TCPStore and leaves first; rank 1 keeps its groups and exits afterwards
(the teardown case: exit when the store host is gone). Standalone: what happens after the
rank's code (no destroy_process_group, the exit) is the point."""
import os
import time

import torch
import torch.distributed as dist
from teardown_job import our_threads

from npudist.testing import rank
from npudist.testing.checks import report

rank.init("hccl")
RANK = rank.rank()
t = torch.ones(4, device="npu")
dist.all_reduce(t)
dist.barrier()
if RANK == 0:
    report(rank=0)
    os._exit(0)  # the store's host is gone, without any teardown
time.sleep(2.5)  # the watchdog's store poller runs into the dead store meanwhile
from npudist import _C  # noqa: E402  (imported after the store's host is gone, on purpose)

t0 = time.monotonic()
_C._shutdown_threads()  # what atexit runs
report(rank=1, shutdown_seconds=time.monotonic() - t0, after_shutdown=our_threads())
