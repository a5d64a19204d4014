"""The hccl flight recorder from Python: dumps and traces on demand.

The recorder itself lives in the hccl backend (C++): a ring of the last
``TORCH_HCCL_TRACE_BUFFER_SIZE`` collectives (default 2000; 0 turns it off) of
every hccl group in this process, with PyTorch's flight-recorder entry schema
(version "2.10"). The watchdog writes it to
``TORCH_HCCL_DEBUG_INFO_TEMP_FILE<rank>`` (default ``/tmp/hccl_trace_rank_<rank>``)
when a collective fails, when another rank of the job asks (through the
store), and on ``SIGUSR1``; PyTorch's analyzer reads the files::

    torchfrtrace /tmp -p hccl_trace_rank_

See docs/watchdog.md.
"""
from __future__ import annotations

import pickle

from npudist import _C

__all__ = ["dump_flight_recorder", "flight_recorder_trace", "request_job_dump"]


def dump_flight_recorder(path: str | None = None) -> str:
    """Writes this process's flight recorder and returns the file's path.

    Args:
        path: where to write; default ``TORCH_HCCL_DEBUG_INFO_TEMP_FILE`` + global rank.

    The file is a pickle of a dict with "version", "pg_config", "pg_status" and
    "entries" (PyTorch's schema), written atomically (temporary file, then rename).

    Raises:
        RuntimeError: the file cannot be written (the message names the path and the OS error),
            or the recorder is off (TORCH_HCCL_TRACE_BUFFER_SIZE=0).
    """
    if _C._hccl_flight_recorder_capacity() == 0:
        raise RuntimeError("the hccl flight recorder is off (TORCH_HCCL_TRACE_BUFFER_SIZE=0); set it to a "
                           "number of entries (default 2000) before the process starts")
    return _C._hccl_dump_flight_recorder(path or "")


def flight_recorder_trace() -> dict:
    """This process's flight recorder as a dict (what :func:`dump_flight_recorder` writes).

    Entries carry record_id, pg_id, process_group (name, desc), collective_seq_id,
    p2p_seq_id, op_id, profiling_name ("hccl:all_reduce", "hccl:send 0->1"),
    time_created_ns, input/output sizes and dtypes, state (scheduled / started /
    completed), time_discovered_started_ns / _completed_ns, duration_ms, retired,
    timeout_ms, is_p2p and frames (Python frames only with NPUDIST_HCCL_TRACE_FRAMES=1).
    """
    return pickle.loads(_C._hccl_flight_recorder_pickle())


def request_job_dump() -> int:
    """Asks every rank of the job to dump its flight recorder (within about a second).

    Goes through the job's store, so it reaches ranks on other hosts; each rank's
    watchdog writes its file once. Returns the request's number, or 0 when no hccl
    group is alive or its store is unreachable.
    """
    return int(_C._hccl_request_job_dump())
