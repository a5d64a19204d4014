"""Helpers shared by the DTensor test workers (run inside each rank)."""
import datetime
import faulthandler
import functools
import os

import torch
import torch.distributed as dist

import npudist
import npudist.dtensor  # noqa: F401  (registers the DTensor strategies of npu's fused ops)
from npudist.testing import checks
from npudist.testing.checks import report  # noqa: F401  (the workers import it from here)

faulthandler.dump_traceback_later(float(os.environ.get("WORKER_HANG_DUMP_S", "240")), exit=True)
torch.set_num_threads(1)

RANK = int(os.environ["RANK"])
WORLD = int(os.environ["WORLD_SIZE"])


def init(backend="cpu:gloo,npu:hccl"):
    torch.npu.set_device(RANK % torch.npu.device_count())
    dist.init_process_group(backend, device_id=torch.device("npu", torch.npu.current_device()),
                            timeout=datetime.timedelta(seconds=120))


# DTensor results against single-process references: one tolerance for every floating dtype.
Checker = functools.partial(checks.Checker, rtol=1e-5, atol=1e-5)
