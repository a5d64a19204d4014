"""Helpers shared by the DTensor test workers (run inside each rank)."""
import datetime
import faulthandler
import json
import os
import traceback

import torch
import torch.distributed as dist

import npudist  # noqa: F401
import npudist.dtensor  # noqa: F401

faulthandler.dump_traceback_later(float(os.environ.get("WORKER_HANG_DUMP_S", "240")), exit=True)
torch.set_num_threads(1)

RANK = int(os.environ["RANK"])
WORLD = int(os.environ["WORLD_SIZE"])


def report(**kw):
    print("RESULT " + json.dumps(kw), flush=True)


def init(backend="cpu:gloo,npu:hccl"):
    torch.npu.set_device(RANK % torch.npu.device_count())
    dist.init_process_group(backend, device_id=torch.device("npu", torch.npu.current_device()),
                            timeout=datetime.timedelta(seconds=120))


class Checker:
    """Collects failures instead of stopping at the first; finish() reports them and exits non-zero."""

    def __init__(self):
        self.failures, self.checks = [], 0

    def close(self, got, want, what, rtol=1e-5, atol=1e-5):
        self.checks += 1
        got, want = got.detach().cpu(), want.detach().cpu()
        try:
            torch.testing.assert_close(got, want, rtol=rtol, atol=atol)
        except AssertionError as err:
            self.failures.append(f"{what}: {' '.join(str(err).split())[:400]}")

    def true(self, cond, what):
        self.checks += 1
        if not cond:
            self.failures.append(what)

    def run(self, what, fn):
        try:
            return fn()
        except Exception:
            self.failures.append(f"{what} raised:\n{traceback.format_exc()[-2500:]}")
            return None

    def finish(self, **extra):
        report(kind="summary", rank=RANK, checks=self.checks, failures=self.failures, **extra)
        dist.barrier()
        dist.destroy_process_group()
        raise SystemExit(1 if self.failures else 0)
