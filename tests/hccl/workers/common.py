"""The hccl workers' names over the one rank-setup helper (npudist.testing.rank): hccl's
init, the dtype lists and inputs of the collective matrix, and its Checker tolerance."""
import functools
import os

import torch

from npudist.testing import checks, rank
from npudist.testing.checks import report  # noqa: F401  (the workers import it from here)
from tests.hccl import CPU_AND_NPU  # noqa: F401  (the workers import it from here)

# A hung rank prints every thread's stack before the test's timeout kills it.
rank.prepare(float(os.environ.get("WORKER_HANG_DUMP_S", "150")))

RANK = rank.rank()
WORLD = rank.world_size()

FLOATS = [torch.float32, torch.float64, torch.float16, torch.bfloat16]
INTS = [torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8]
ALL_DTYPES = FLOATS + INTS + [torch.bool]




def init(device_id=True, backend="hccl", **kw):
    """init_process_group(backend) on npu:RANK (modulo the device count)."""
    rank.init(backend, device_id=device_id, device_index=RANK, **kw)


make = rank.deterministic_input
"""Deterministic input of `rank` (every rank can build every rank's input)."""

# Across simulated hosts float16/bfloat16 partial sums are rounded per host: MATRIX_TOL_SCALE widens
# the default tolerances.
Checker = functools.partial(checks.Checker, tol_scale=float(os.environ.get("MATRIX_TOL_SCALE", "1")))
