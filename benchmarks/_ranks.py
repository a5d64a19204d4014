"""Rank set-up shared by the multi-rank benchmarks (run inside a rank npurun started)."""
import os
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def init_npu_rank():
    """Puts examples/ on sys.path (the flagship's model), imports npudist, makes npu:LOCAL_RANK
    current and initialises the default process group on hccl bound to it. Returns the device."""
    import torch
    import torch.distributed as dist

    if os.path.join(REPO, "examples") not in sys.path:
        sys.path.insert(0, os.path.join(REPO, "examples"))
    import npudist  # noqa: F401  (registers npu when torch's backend autoload is off)

    lr = int(os.environ["LOCAL_RANK"])
    torch.npu.set_device(lr)
    npu = torch.device("npu", lr)
    dist.init_process_group("hccl", device_id=npu)
    return npu
