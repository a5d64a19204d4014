"""Reading and writing step traces (the format is in docs/plan.md, "Step trace").

``npurun --profile DIR`` writes ``DIR/steptrace/rank<R>.steptrace.json`` per rank
(npudist.profiler.step_trace). :func:`load_dir` reads a folder of them (DIR or DIR/steptrace), :func:`save` /
:func:`load` one, checking the format name and major version and the fields the predictor needs.
"""
from __future__ import annotations

import glob
import json
import os
import re

from npudist.profiler.step_trace import STEP_TRACE_FORMAT, STEP_TRACE_VERSION

__all__ = ["STEP_TRACE_FORMAT", "STEP_TRACE_VERSION", "load", "load_dir", "save", "validate"]

_REQUIRED = {
    "kernel": ("name", "stream"),
    "memcpy": ("stream", "bytes"),
    "graph": ("stream",),
    "collective": ("name", "pg", "seq", "group_ranks", "stream", "issue_stream", "bytes"),
    "record": ("stream", "event"),
    "wait_event": ("stream", "event"),
    "wait_collective": ("stream", "pg", "seq"),
    "sync_event": ("event",),
    "sync_stream": ("stream",),
    "sync_device": (),
}


def validate(trace: dict, where: str = "step trace") -> dict:
    """Checks format, version and each item's required fields; returns ``trace``. Raises ValueError naming
    the item and the field."""
    if trace.get("format") != STEP_TRACE_FORMAT:
        raise ValueError(f"{where}: not a step trace (format {trace.get('format')!r}, expected {STEP_TRACE_FORMAT!r})")
    major = str(trace.get("version", "")).split(".")[0]
    if major != STEP_TRACE_VERSION.split(".")[0]:
        raise ValueError(f"{where}: step-trace version {trace.get('version')!r}; this npudist reads "
                         f"{STEP_TRACE_VERSION.split('.')[0]}.x (record the trace again with this version)")
    for key in ("rank", "world_size", "ops"):
        if key not in trace:
            raise ValueError(f"{where}: missing '{key}'")
    for i, it in enumerate(trace["ops"]):
        kind = it.get("kind")
        if kind not in _REQUIRED:
            raise ValueError(f"{where}: ops[{i}] has kind {kind!r}; known: {', '.join(_REQUIRED)}")
        for f in _REQUIRED[kind]:
            if f not in it:
                raise ValueError(f"{where}: ops[{i}] ({kind}) lacks '{f}'")
    return trace


def load(path: str) -> dict:
    """One step trace from ``path`` (validated)."""
    try:
        with open(path, encoding="utf-8") as f:
            trace = json.load(f)
    except json.JSONDecodeError as e:
        raise ValueError(f"{path}: not JSON ({e})") from None
    return validate(trace, path)


def save(trace: dict, path: str) -> None:
    """Writes a step trace (validated first) to ``path``."""
    validate(trace, path)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(trace, f, separators=(",", ":"))


def load_dir(path: str) -> dict[int, dict]:
    """rank -> step trace for every ``rank<R>.steptrace.json`` in folder ``path`` (or ``path/steptrace``).

    A trace with ``represents`` (a logical capture's representative rank) also gives the listed ranks that
    have no file of their own (npudist.plan.capture.expand_layout). Raises FileNotFoundError for a missing
    folder or one without step traces, ValueError for two traces of one rank or a trace whose file name and
    rank disagree.
    """
    if not os.path.isdir(path):
        raise FileNotFoundError(f"trace folder {path!r} does not exist (record one with npurun --profile {path} ...)")
    if os.path.isdir(os.path.join(path, "steptrace")):  # npurun --profile DIR puts them in DIR/steptrace
        path = os.path.join(path, "steptrace")
    files = sorted(glob.glob(os.path.join(path, "rank*.steptrace.json")))
    if not files:
        raise FileNotFoundError(f"{path}: no rank<R>.steptrace.json files (record them with npurun --profile {path} "
                                f"--profile-steps A:B; the script calls npudist.profiler.step() once per step)")
    out: dict[int, dict] = {}
    for f in files:
        m = re.match(r"rank(\d+)\.steptrace\.json$", os.path.basename(f))
        if not m:
            continue
        t = load(f)
        if int(t["rank"]) != int(m.group(1)):
            raise ValueError(f"{f}: the file is named for rank {m.group(1)} but holds rank {t['rank']}")
        out[int(t["rank"])] = t
    # a logical capture's representative trace stands for the ranks in its "represents" (docs/plan.md)
    from npudist.plan.capture import expand_layout
    for t in list(out.values()):
        missing = [r for r in t.get("represents") or () if int(r) not in out]
        out.update(expand_layout(t, missing))
    return dict(sorted(out.items()))
