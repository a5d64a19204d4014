"""Shared by the FSDP2/DDP/DCP workers: process-group setup, the tiny GPT, batches, and a
check list reported as one RESULT JSON line per rank."""
import json
import os
import sys
import traceback

import torch
import torch.distributed as dist

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
sys.path.insert(0, os.path.join(REPO, "examples"))

import npudist  # noqa: E402,F401
from train_gpt import GPT, GPTConfig  # noqa: E402,F401

TINY = GPTConfig(seq_len=16, d_model=32, n_layer=2, n_head=2)
B = 2  # rows per rank per step


def setup():
    """init_process_group('hccl', device_id=npu:LOCAL_RANK); returns (rank, world, device)."""
    lr = int(os.environ["LOCAL_RANK"])
    torch.npu.set_device(lr)
    dev = torch.device("npu", lr)
    dist.init_process_group("hccl", device_id=dev)
    return dist.get_rank(), dist.get_world_size(), dev


def global_batch(step, world, rows=B, cfg=TINY):
    """The step's batch of all ranks, the same on every rank: int64 [world * rows, seq_len + 1] on cpu."""
    g = torch.Generator().manual_seed(1000 + step)
    return torch.randint(0, cfg.vocab_size, (world * rows, cfg.seq_len + 1), generator=g)


class Checks:
    """Collects named checks; report() prints RESULT {"checks": n, "failures": [...]}."""

    def __init__(self):
        self.n, self.failures, self.info = 0, [], {}

    def check(self, name, ok, detail=""):
        self.n += 1
        if not ok:
            self.failures.append(f"{name}: {detail}")

    def close(self, name, a, b, rtol, atol):
        a, b = torch.as_tensor(a).detach().float().cpu(), torch.as_tensor(b).detach().float().cpu()
        ok = a.shape == b.shape and torch.allclose(a, b, rtol=rtol, atol=atol)
        diff = float((a - b).abs().max()) if a.shape == b.shape else f"shapes {tuple(a.shape)} vs {tuple(b.shape)}"
        self.check(name, ok, f"max abs diff {diff} (rtol {rtol}, atol {atol})")

    def run(self, name, fn, *args, **kw):
        """Runs one group of checks; an exception becomes a failure (the others still run if the
        ranks stay in step)."""
        try:
            fn(self, *args, **kw)
        except Exception as e:  # noqa: BLE001  (reported, the test fails on it)
            self.n += 1
            self.failures.append(f"{name}: raised {type(e).__name__}: {e}\n{traceback.format_exc()[-1500:]}")

    def report(self):
        print("RESULT " + json.dumps({"checks": self.n, "failures": self.failures, "info": self.info}), flush=True)
