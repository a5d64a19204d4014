"""The function benchmarks/rank_launch.py runs on every rank (in a module of its own: the ranks
import it by name, which they cannot do for a function of a script run as __main__)."""


def all_reduce_once():
    """all_reduce a one-element npu tensor of ones over the (already initialised) group; returns
    the sum, which is the number of ranks."""
    import torch
    import torch.distributed as dist

    x = torch.ones(1, device="npu")
    dist.all_reduce(x)
    return float(x.item())
