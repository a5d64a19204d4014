"""The labels every npudist series carries: ``rank``, ``local_rank``, ``host``.

Read at scrape time, so a rank that initialises its process group after the endpoint
started is labelled with its group rank from then on.
"""
from __future__ import annotations

import socket

from npudist import _env

LABELS = ("rank", "local_rank", "host")


def host_name() -> str:
    """$NPUDIST_HOSTNAME (a simulated host's name, as the hccl backend and npurun use it), else the hostname."""
    return _env.get_str("NPUDIST_HOSTNAME") or socket.gethostname()


def rank_labels() -> tuple[str, str, str]:
    """(rank, local_rank, host) of this process as label values.

    rank: the default process group's rank once torch.distributed is initialised, else $RANK;
    local_rank: $LOCAL_RANK. Either is "" when unknown (e.g. a single process without a launcher).
    """
    rank = _env.get_str("RANK", "")
    try:
        import torch.distributed as dist
        if dist.is_available() and dist.is_initialized():
            rank = str(dist.get_rank())
    except Exception:  # a group being torn down: fall back to the environment
        pass
    return rank, _env.get_str("LOCAL_RANK", ""), host_name()
