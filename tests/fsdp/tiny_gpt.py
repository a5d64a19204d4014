"""The FSDP2/DDP/DCP tests' model and data (imported by their ranks and by tests/graph's compile
worker): the flagship's GPT at a tiny size, the global batch of a step, the Checker
(npudist.testing.checks) and the process-group setup (npudist.testing.rank's)."""
import os
import sys

import torch
import torch.distributed as dist

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
if os.path.join(REPO, "examples") not in sys.path:
    sys.path.insert(0, os.path.join(REPO, "examples"))

from train_gpt import GPT, GPTConfig, build_fsdp_model  # noqa: E402,F401  (after examples/ is on sys.path; the tests import it from here)

from npudist.testing import rank  # noqa: E402  (after examples/ is on sys.path)
from npudist.testing.checks import Checker  # noqa: E402,F401  (the tests import it from here)

TINY = GPTConfig(seq_len=16, d_model=32, n_layer=2, n_head=2)
B = 2  # rows per rank per step


def setup():
    """init_process_group('hccl', device_id=npu:LOCAL_RANK); returns (rank, world, device)."""
    dev = rank.init("hccl")
    return dist.get_rank(), dist.get_world_size(), dev


def global_batch(step, world, rows=B, cfg=TINY):
    """The step's batch of all ranks, the same on every rank: int64 [world * rows, seq_len + 1] on cpu."""
    g = torch.Generator().manual_seed(1000 + step)
    return torch.randint(0, cfg.vocab_size, (world * rows, cfg.seq_len + 1), generator=g)
