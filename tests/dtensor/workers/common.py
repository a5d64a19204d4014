"""The DTensor workers' names over the one rank-setup helper (npudist.testing.rank): a gloo+hccl
group and one tolerance for DTensor results against single-process references."""
import functools

import npudist.dtensor  # noqa: F401  (registers the DTensor strategies of npu's fused ops)
from npudist.testing import checks, rank
from npudist.testing.checks import report  # noqa: F401  (the workers import it from here)

rank.prepare()

RANK = rank.rank()
WORLD = rank.world_size()


def init(backend="cpu:gloo,npu:hccl"):
    """init_process_group(backend) on npu:RANK with a 120 s timeout."""
    rank.init(backend, device_index=RANK, timeout_s=120)


Checker = functools.partial(checks.Checker, rtol=1e-5, atol=1e-5)
