"""Tests of the hccl c10d backend.

``run_ranks(fn, nranks, *args, ...)`` is :func:`npudist.testing.multiproc.run_on_ranks` (the rank
code of every test is a function of its test module); ``launch(script, nranks, ...)`` is
:func:`npudist.testing.multiproc.launch` on ``tests/hccl/workers/<script>``, the programs that must
be standalone (the fork, spawn and exit-time teardown cases; ``restart.py`` runs under npurun).
Both set ``TORCH_HCCL_ASYNC_ERROR_HANDLING=0``: these tests check what the survivors of a failure
see and do next; the watchdog's default (take the process down) is tested in tests/watchdog.
"""
import os

import torch

from npudist.testing import checks, multiproc

WORKERS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "workers")
ENV = {"TORCH_HCCL_ASYNC_ERROR_HANDLING": "0"}
CPU_AND_NPU = "cpu:hccl,npu:hccl"
"""hccl registered for cpu too (a group whose point is hccl's cpu path names it; hccl alone is npu only,
as torch_npu registers it)."""



FLOATS = [torch.float32, torch.float64, torch.float16, torch.bfloat16]
INTS = [torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8]
ALL_DTYPES = FLOATS + INTS + [torch.bool]
"""The dtypes of the collective matrix."""


def Checker(**kw):  # noqa: N802  (stands in for the class it builds)
    """npudist.testing.checks.Checker with tol_scale from MATRIX_TOL_SCALE (in the rank's environment;
    across simulated hosts float16/bfloat16 partial sums are rounded per host)."""
    kw.setdefault("tol_scale", float(os.environ.get("MATRIX_TOL_SCALE", "1")))
    return checks.Checker(**kw)


def launch(script, nranks, args=(), env=None, timeout=240, hosts=None):
    """Runs workers/<script> on `nranks` ranks; returns npudist.testing.multiproc.Ranks."""
    return multiproc.launch(os.path.join(WORKERS, script), nranks, args=args, env={**ENV, **(env or {})},
                            timeout=timeout, hosts=hosts)


def run_ranks(fn, nranks, *args, env=None, timeout=240, hosts=None, backend="hccl", **kwargs):
    """Runs ``fn(*args, **kwargs)`` on `nranks` ranks (the hccl group up unless ``backend=None``);
    returns npudist.testing.multiproc.Ranks."""
    return multiproc.run_on_ranks(fn, nranks, *args, backend=backend, env={**ENV, **(env or {})}, timeout=timeout,
                                  hosts=hosts, **kwargs)
