"""Resuming a checkpoint on another number of ranks: when it is a request, and when an error.

A DCP checkpoint of an FSDP2 model loads on any number of ranks (DCP reshards on load). Whether
it *should* is the job's decision: a run that comes back on fewer ranks because a host was lost
is what an elastic job asks for; the same change in a job launched for a fixed size is more
likely a wrong ``--nproc`` than a wish. npudist's rule (issue 44, docs/training.md):

- under an elastic node range (``npurun --nnodes MIN:MAX`` with MIN < MAX, which npurun passes to
  the ranks as ``NPUDIST_NNODES``), a world-size change is the resharding request;
- an explicit request (the flagship's ``--reshard``) is one too;
- otherwise it is an error naming both sizes.
"""
from __future__ import annotations

from npudist import _env

NNODES = "NPUDIST_NNODES"  # npurun's --nnodes, verbatim ("2" or "1:2")


def elastic_range() -> tuple[int, int] | None:
    """(min, max) nodes when the job runs under an elastic range (``NPUDIST_NNODES`` = MIN:MAX,
    MIN < MAX), else None. Raises ValueError naming the variable if its value is not N or MIN:MAX."""
    value = _env.get_str(NNODES)
    if value is None:
        return None
    lo, _, hi = value.partition(":")
    try:
        lo_n, hi_n = int(lo), int(hi or lo)
    except ValueError:
        raise ValueError(f"{NNODES}={value!r} is not a node count: N or MIN:MAX (npurun sets it from --nnodes)") \
            from None
    return (lo_n, hi_n) if lo_n < hi_n else None


def check_world_size(path: str, saved: int, current: int, requested: bool = False) -> str | None:
    """Decides whether the checkpoint at ``path``, written by ``saved`` ranks, may be resumed by
    ``current`` ranks. Returns None when the sizes agree, a message to print when the change is a
    resharding request (an elastic range, or ``requested``); raises RuntimeError naming both sizes
    otherwise."""
    if saved == current:
        return None
    rng = elastic_range()
    if rng is None and not requested:
        raise RuntimeError(
            f"checkpoint {path} was written by {saved} ranks, this run has {current}: resuming on another number "
            f"of ranks reshards the checkpoint, which a fixed-size job does not do unasked. Launch with the "
            f"ranks it was written by, under an elastic range (npurun --nnodes MIN:MAX), or ask for it "
            f"(train_gpt.py --reshard)")
    why = f"the elastic range --nnodes {rng[0]}:{rng[1]}" if rng else "--reshard"
    return f"resharding checkpoint {path} from {saved} ranks onto {current} ({why})"
