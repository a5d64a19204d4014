"""Helpers shared by the hccl test workers (run inside each rank)."""
import faulthandler
import functools
import os

import torch
import torch.distributed as dist

import npudist  # noqa: F401  registers npu and hccl
from npudist.testing import checks
from npudist.testing.checks import report  # noqa: F401  (the workers import it from here)

# A hung rank prints every thread's stack before the test's timeout kills it.
faulthandler.dump_traceback_later(float(os.environ.get("WORKER_HANG_DUMP_S", "150")), exit=True)

# Several ranks share 2 cores: one intra-op thread each (as torchrun sets OMP_NUM_THREADS=1).
torch.set_num_threads(1)

RANK = int(os.environ["RANK"])
WORLD = int(os.environ["WORLD_SIZE"])

FLOATS = [torch.float32, torch.float64, torch.float16, torch.bfloat16]
INTS = [torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8]
ALL_DTYPES = FLOATS + INTS + [torch.bool]


# hccl is registered for npu only (as torch_npu registers it); workers whose point is hccl's cpu
# path name it for cpu too.
CPU_AND_NPU = "cpu:hccl,npu:hccl"


def init(device_id=True, backend="hccl", **kw):
    torch.npu.set_device(RANK % torch.npu.device_count())
    if device_id:
        kw.setdefault("device_id", torch.device("npu", torch.npu.current_device()))
    dist.init_process_group(backend, **kw)


def make(rank, shape, dtype, seed, device, kind="any"):
    """Deterministic input of `rank` (every rank can build every rank's input)."""
    g = torch.Generator().manual_seed(seed * 1000 + rank)
    if dtype == torch.bool:
        t = torch.randint(0, 2, shape, generator=g).bool()
    elif dtype.is_floating_point:
        if kind == "product":
            t = (torch.rand(shape, generator=g, dtype=torch.float64) + 0.5).to(dtype)
        else:
            t = torch.randn(shape, generator=g, dtype=torch.float64).to(dtype)
    elif dtype == torch.uint8:
        t = torch.randint(0, 6, shape, generator=g, dtype=dtype)
    else:
        t = torch.randint(-5, 6, shape, generator=g, dtype=dtype)
    return t.to(device)


# Across simulated hosts float16/bfloat16 partial sums are rounded per host: MATRIX_TOL_SCALE widens
# the default tolerances.
Checker = functools.partial(checks.Checker, tol_scale=float(os.environ.get("MATRIX_TOL_SCALE", "1")))
