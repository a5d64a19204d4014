"""How a rank started by ``npurun --metrics-port`` tells npurun where its endpoint is.

npurun gives each rank ``NPUDIST_METRICS_DIR`` (a directory of the job). The rank serves its
metrics on 127.0.0.1 on a free port and writes ``rank-<pid>.json`` there
(``{"pid", "addr", "port", "rank", "local_rank", "restart_count"}``, written to a temporary
name and renamed, so a reader never sees half a file). npurun's node endpoint reads these
files when it is scraped, keeps those whose pid is one of its live ranks, and fetches and
merges their expositions.
"""
from __future__ import annotations

import json
import os

from npudist import _env

DIR_ENV = "NPUDIST_METRICS_DIR"


def write(directory: str, pid: int, addr: str, port: int) -> str:
    """Writes this rank's announcement into ``directory``; returns the file's path."""
    record = {"pid": pid, "addr": addr, "port": port, "rank": _env.get_str("RANK", ""),
              "local_rank": _env.get_str("LOCAL_RANK", ""),
              "restart_count": _env.get_str("TORCHELASTIC_RESTART_COUNT", "")}
    path = os.path.join(directory, f"rank-{pid}.json")
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(record, f)
    os.replace(tmp, path)
    return path


def read(directory: str) -> dict[int, dict]:
    """Announcements in ``directory`` by pid (unreadable or partial files are skipped)."""
    out: dict[int, dict] = {}
    try:
        names = os.listdir(directory)
    except OSError:
        return out
    for name in names:
        if not (name.startswith("rank-") and name.endswith(".json")):
            continue
        try:
            with open(os.path.join(directory, name)) as f:
                record = json.load(f)
            out[int(record["pid"])] = record
        except (OSError, ValueError, KeyError, TypeError):
            continue
    return out
