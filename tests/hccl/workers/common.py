"""Helpers shared by the hccl test workers (run inside each rank)."""
import faulthandler
import json
import os
import sys
import traceback

import torch
import torch.distributed as dist

import npudist  # noqa: F401  registers npu and hccl

# A hung rank prints every thread's stack before the test's timeout kills it.
faulthandler.dump_traceback_later(float(os.environ.get("WORKER_HANG_DUMP_S", "150")), exit=True)

# Several ranks share 2 cores: one intra-op thread each (as torchrun sets OMP_NUM_THREADS=1).
torch.set_num_threads(1)

RANK = int(os.environ["RANK"])
WORLD = int(os.environ["WORLD_SIZE"])

FLOATS = [torch.float32, torch.float64, torch.float16, torch.bfloat16]
INTS = [torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8]
ALL_DTYPES = FLOATS + INTS + [torch.bool]


def report(**kw):
    print("RESULT " + json.dumps(kw), flush=True)


def init(device_id=True, **kw):
    torch.npu.set_device(RANK % torch.npu.device_count())
    if device_id:
        kw.setdefault("device_id", torch.device("npu", torch.npu.current_device()))
    dist.init_process_group("hccl", **kw)


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


def tol(dtype):
    # Across simulated hosts float16/bfloat16 partial sums are rounded per host.
    scale = float(os.environ.get("MATRIX_TOL_SCALE", "1"))
    return tuple(scale * v for v in _TOL.get(dtype, (0, 0)))


_TOL = {torch.float16: (2e-3, 2e-3), torch.bfloat16: (1.6e-2, 1.6e-2), torch.float32: (1e-5, 1e-5),
        torch.float64: (1e-12, 1e-12)}


class Checker:
    """Collects failures instead of stopping at the first."""

    def __init__(self):
        self.failures = []
        self.checks = 0

    def close(self, got, want, what):
        self.checks += 1
        got = got.detach().cpu()
        want = want.detach().cpu()
        try:
            if got.dtype != want.dtype or got.shape != want.shape:
                raise AssertionError(f"dtype/shape {got.dtype}{tuple(got.shape)} != {want.dtype}{tuple(want.shape)}")
            if got.dtype.is_floating_point:
                rtol, atol = tol(got.dtype)
                g, w = got.double(), want.double()
                bad = ((g - w).abs() > atol + rtol * w.abs()) & ~(g.isnan() & w.isnan())
                if bad.any():
                    i = bad.nonzero()[0].item()
                    raise AssertionError(f"{int(bad.sum())} elements differ, e.g. [{i}] {g[i].item()} vs {w[i].item()}")
            elif not torch.equal(got, want):
                bad = (got != want).nonzero()[:3].tolist()
                raise AssertionError(f"differs at {bad}")
        except AssertionError as e:
            self.failures.append(f"{what}: {str(e)[:300]}")

    def run(self, what, fn):
        self.checks += 1
        try:
            fn()
        except Exception:  # noqa: BLE001  - reported, not swallowed
            self.failures.append(f"{what}: raised {traceback.format_exc().strip().splitlines()[-1][:400]}")

    def finish(self, **extra):
        report(rank=RANK, checks=self.checks, failures=self.failures[:40], nfail=len(self.failures), **extra)
