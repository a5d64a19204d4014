"""The hccl watchdog's view of this process, from Python: what ``npudist_hccl_*`` metrics
export, as a dict, without a metrics endpoint (docs/watchdog.md).

The values are kept in C++ by the hccl backend and its watchdog; reading them copies a
snapshot (``npudist._C._hccl_stats()``), nothing runs per collective.
"""
from __future__ import annotations

__all__ = ["watchdog_status", "stragglers"]

_GROUP_KEYS = ("group", "desc", "rank", "size", "in_flight", "oldest_in_flight_age_s", "timeouts", "mismatches",
               "straggler_score_s")


def watchdog_status() -> dict:
    """This process's hccl watchdog state now.

    Returns ``{"watchdog_heartbeat_age_s": float | None, "flight_recorder_entries": int | None,
    "groups": [{"group", "desc", "rank", "size", "in_flight", "oldest_in_flight_age_s",
    "timeouts", "mismatches", "straggler_score_s"}, ...]}`` — one entry per live hccl process
    group (``group`` is the c10d group name, as in flight-recorder dumps; ``rank``/``size`` this
    rank's place in it). ``straggler_score_s`` is the recent-weighted mean of the seconds the
    other local ranks waited for this rank per collective (0: it was never the last to
    arrive); ``None`` values: the watchdog or the recorder is off. Seconds, counts.

    Raises RuntimeError when the extension was built without these statistics (rebuild).
    """
    from npudist import _C

    source = getattr(_C, "_hccl_stats", None)
    if source is None:
        raise RuntimeError("npudist._C has no _hccl_stats: the extension is older than this npudist; "
                           "run ./run.sh build")
    stats = source()
    return {"watchdog_heartbeat_age_s": stats.get("watchdog_heartbeat_age_s"),
            "flight_recorder_entries": stats.get("flight_recorder_entries"),
            "groups": [{k: g.get(k) for k in _GROUP_KEYS} for g in stats.get("groups") or []]}


def stragglers(min_score_s: float = 0.0) -> list[dict]:
    """The groups of :func:`watchdog_status` in which this rank's straggler score exceeds
    ``min_score_s`` seconds, highest score first (the watchdog's periodic straggler log names
    the same ranks across the job; this is one rank's own share)."""
    groups = [g for g in watchdog_status()["groups"] if g["straggler_score_s"] > min_score_s]
    return sorted(groups, key=lambda g: g["straggler_score_s"], reverse=True)
