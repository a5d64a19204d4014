"""Placement helpers shared by the fused ops' DTensor sharding strategies.

A strategy function (``register_sharding``'s contract) returns, for one mesh dimension, the
acceptable (output placements, input placements) pairs; input placements list one entry per
argument, ``None`` for non-tensors. Imported by the strategy functions when DTensor calls
them, never at op registration (this module imports torch.distributed.tensor).
"""
from __future__ import annotations

from torch.distributed.tensor import Partial, Replicate, Shard  # noqa: F401  (the strategies import them from here)
from torch.distributed.tensor._dtensor_spec import DTensorSpec

R = Replicate()


def is_spec(a) -> bool:
    """Whether a strategy argument is a tensor (DTensor passes tensors as DTensorSpec)."""
    return isinstance(a, DTensorSpec)


def replicate_all(*args) -> list:
    """Replicate for every tensor argument, None for the others."""
    return [R if is_spec(a) else None for a in args]


def broadcast_placement(r, x, d, sharded, broadcast):
    """Placement of ``r`` (broadcast to ``x``, right-aligned) when ``x`` is sharded on dim ``d``:
    ``sharded`` where r has x's full size on that dim, else ``broadcast``."""
    rd = d - (x.ndim - r.ndim)
    if rd >= 0 and r.shape[rd] == x.shape[d]:
        return sharded
    return broadcast
