"""Shared by the FSDP2/DDP/DCP workers: process-group setup, the tiny GPT, batches, and a
Checker (npudist.testing.checks) reported as one RESULT JSON line per rank."""
import os
import sys

import torch
import torch.distributed as dist

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
sys.path.insert(0, os.path.join(REPO, "examples"))

from train_gpt import GPT, GPTConfig  # noqa: E402,F401  (after examples/ is on sys.path; the workers import it from here)

import npudist  # noqa: E402,F401  (after examples/ is on sys.path; registers npu)
from npudist.testing.checks import Checker  # noqa: E402,F401  (the workers import it from here)

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
