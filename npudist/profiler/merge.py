"""Merge per-rank torch.profiler traces into one Chrome/Perfetto trace (one process per rank).

``python -m npudist.profiler merge DIR -o job.json`` reads every ``*.json`` / ``*.json.gz``
trace in DIR (the ``rank<R>.json`` files ``npurun --profile DIR`` writes, or any trace that
``export_chrome_trace`` wrote in a distributed job) and writes one trace in which rank R is
process R ("rank R"): its CPU threads keep their thread ids, and every npu stream lane
becomes a thread "npu D stream S" of the same process, so time spent waiting in a collective
shows side by side across ranks.

Timestamps are kept: torch.profiler stamps events with the host's clock, which every rank
of one host shares. Ranks on different hosts are not aligned (clocks of different machines
differ); the merged trace says which host each rank ran on.
"""
from __future__ import annotations

import glob
import gzip
import json
import os
import re

# Thread ids of npu lanes in the merged trace: above any Linux thread id (pid_max <= 2^22).
_LANE_TID_BASE = 1 << 30
# Flow-event ids are per trace: rank R's are moved into their own range.
_FLOW_ID_STRIDE = 1 << 40
_HOST_CATEGORIES = {"cpu_op", "python_function", "user_annotation", "cpu_instant_event", "fwdbwd",
                    "Trace", "ac2g_cpu"}


class MergeError(ValueError):
    """A trace folder or file that cannot be merged; the message says which and why."""


def _load(path: str) -> dict:
    opener = gzip.open if path.endswith(".gz") else open
    try:
        with opener(path, "rt") as f:
            data = json.load(f)
    except (OSError, ValueError) as e:
        raise MergeError(f"{path}: not a readable Chrome trace ({e})") from None
    if not isinstance(data, dict) or not isinstance(data.get("traceEvents"), list):
        raise MergeError(f"{path}: no 'traceEvents' list (is this a torch.profiler trace?)")
    return data


def _rank_of(path: str, data: dict, fallback: int) -> int:
    info = data.get("distributedInfo") or {}
    if isinstance(info.get("rank"), int):
        return info["rank"]
    m = re.search(r"rank[_-]?(\d+)", os.path.basename(path))
    return int(m.group(1)) if m else fallback


def _trace_files(folder: str) -> list[str]:
    if not os.path.isdir(folder):
        raise MergeError(f"{folder!r} is not a directory (give the folder passed to npurun --profile)")
    files = sorted(glob.glob(os.path.join(folder, "*.json")) + glob.glob(os.path.join(folder, "*.json.gz")))
    if not files:
        raise MergeError(f"{folder!r} holds no *.json or *.json.gz trace")
    return files


def _host_pids(events: list) -> set:
    pids = {e.get("pid") for e in events if e.get("cat") in _HOST_CATEGORIES and not isinstance(e.get("pid"), str)}
    # Metadata names the host process "python" (or the script); devices are labelled by Kineto.
    for e in events:
        if (e.get("ph") == "M" and e.get("name") == "process_name" and not isinstance(e.get("pid"), str)
                and not any(m.get("ph") == "M" and m.get("name") == "process_labels" and m.get("pid") == e.get("pid")
                            for m in events)):
            pids.add(e.get("pid"))
    return pids


def merge_rank_events(rank: int, data: dict) -> list[dict]:
    """The events of one rank's trace, moved to process ``rank`` (see the module doc)."""
    events = data["traceEvents"]
    host = _host_pids(events)
    lanes: dict[tuple, int] = {}
    lane_names: dict[tuple, str] = {}
    for e in events:  # Kineto names the lanes of device processes ("stream 7")
        if e.get("ph") == "M" and e.get("name") == "thread_name" and e.get("pid") not in host \
                and not isinstance(e.get("pid"), str):
            lane_names[(e["pid"], e.get("tid"))] = e.get("args", {}).get("name", "")

    def lane_tid(pid, tid) -> int:
        key = (pid, tid)
        if key not in lanes:
            lanes[key] = _LANE_TID_BASE + len(lanes)
        return lanes[key]

    out: list[dict] = []
    for e in events:
        pid = e.get("pid")
        if isinstance(pid, str):  # Kineto's "Spans"/"Traces" bookkeeping rows
            continue
        if e.get("ph") == "M":
            if e.get("name") in ("process_name", "process_labels", "process_sort_index"):
                continue
            if e.get("name") in ("thread_name", "thread_sort_index") and pid not in host:
                continue  # lanes are named below
        e = dict(e)
        if pid not in host:
            e["tid"] = lane_tid(pid, e.get("tid"))
        e["pid"] = rank
        if "id" in e and e.get("ph") in ("s", "f", "t") and isinstance(e["id"], int):
            e["id"] = rank * _FLOW_ID_STRIDE + e["id"]
        out.append(e)
    host_name = data.get("host_name") or ""
    label = f"rank {rank}" + (f" ({host_name})" if host_name else "")
    out.append({"ph": "M", "name": "process_name", "pid": rank, "tid": 0, "args": {"name": label}})
    out.append({"ph": "M", "name": "process_sort_index", "pid": rank, "tid": 0, "args": {"sort_index": rank}})
    for (pid, tid), new_tid in lanes.items():
        name = lane_names.get((pid, tid)) or f"lane {tid}"
        out.append({"ph": "M", "name": "thread_name", "pid": rank, "tid": new_tid,
                    "args": {"name": f"npu {pid} {name}"}})
        out.append({"ph": "M", "name": "thread_sort_index", "pid": rank, "tid": new_tid,
                    "args": {"sort_index": new_tid}})
    return out


def merge_traces(folder: str, output: str) -> dict:
    """Merges every trace in ``folder`` into ``output`` (Chrome trace JSON); returns a summary.

    The summary maps ``ranks`` to the ranks found and ``events`` to the number of events
    written. Raises MergeError for a missing/empty folder, an unreadable trace, or two traces
    of the same rank; OSError when ``output`` cannot be written.
    """
    files = _trace_files(folder)
    seen: dict[int, str] = {}
    merged: list[dict] = []
    infos = []
    base = None
    for i, path in enumerate(files):
        if os.path.abspath(path) == os.path.abspath(output):
            continue
        data = _load(path)
        rank = _rank_of(path, data, i)
        if rank in seen:
            raise MergeError(f"{path} and {seen[rank]} are both traces of rank {rank}: keep one trace per rank "
                             f"in {folder!r}")
        seen[rank] = path
        merged.extend(merge_rank_events(rank, data))
        infos.append({"rank": rank, "file": os.path.basename(path), "host_name": data.get("host_name"),
                      "distributedInfo": data.get("distributedInfo")})
        b = data.get("baseTimeNanoseconds")
        if isinstance(b, int):
            base = b if base is None else min(base, b)
    doc = {"schemaVersion": 1, "displayTimeUnit": "ms", "traceEvents": merged,
           "npudistRanks": sorted(infos, key=lambda x: x["rank"])}
    if base is not None:
        doc["baseTimeNanoseconds"] = base
    with open(output, "w") as f:
        json.dump(doc, f)
    return {"ranks": sorted(seen), "events": len(merged)}
