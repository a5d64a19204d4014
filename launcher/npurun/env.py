"""The environment npurun gives its ranks: job tag, threads per rank, device visibility.

torchrun's own variables (RANK, LOCAL_RANK, WORLD_SIZE, MASTER_ADDR, ...) are set by
torch.distributed.elastic's agent; this module adds npurun's:

- ``NPUDIST_JOB_TAG``: one random 12-hex-digit token per npurun invocation (kept if the
  user set it). Shared-memory segments of the job are named ``npudist-<tag>-...`` so
  npurun can remove what a killed job left in /dev/shm.
- ``OMP_NUM_THREADS``: the cores npurun may use, divided among the local ranks (the
  first ``cores % nproc`` ranks get one more), instead of torchrun's blanket 1. A value
  the user set wins.
- ``NPUDIST_METRICS_DIR`` (with ``--metrics-port``): the directory where each rank announces
  its metrics endpoint for npurun's node endpoint (launcher/npurun/metrics.py).
- ``NPUDIST_NNODES``: ``--nnodes`` as given (``2``, or ``1:2`` for an elastic range); a rank
  resuming a checkpoint written by another number of ranks reads it (npudist.fsdp.elastic:
  under MIN:MAX with MIN < MAX the change is a resharding request, else an error).
- ``ASCEND_HOME_PATH``, ``ASCEND_TOOLKIT_HOME``, ``ASCEND_AICPU_PATH``: where unset, npudist's
  CANN-style home (npudist/_cann.py), as CANN's set_env.sh would have exported them.
- ``ASCEND_RT_VISIBLE_DEVICES``, ``NPUDIST_DEVICE_COUNT``, ``NPUDIST_HOSTNAME``: passed
  through unchanged; local rank i uses visible npu i.

And one of torch's, in npurun's own environment (the agent reads it): ``TORCH_DISABLE_SHARE_RDZV_TCP_STORE=1``
unless the user set it. torch 2.13's c10d rendezvous otherwise hands the ranks of every restart
round the one TCPStore server it created in the first round, and the ranks' env:// store no
longer prefixes keys per attempt (torch/distributed/rendezvous.py assumes a new store per retry):
a restarted round then reads the dead round's keys, e.g. ``new_group(backend="gloo")`` connects
to the dead ranks' Gloo addresses and hangs or fails (pytorch/pytorch#135712). With the share
disabled, rank 0 of each round hosts a fresh store on a fresh port.
"""
from __future__ import annotations

import os
import secrets

from npudist import _cann, _env

JOB_TAG = "NPUDIST_JOB_TAG"
SHARE_STORE = "TORCH_DISABLE_SHARE_RDZV_TCP_STORE"  # torch's opt-out of one store for every round
METRICS_DIR = "NPUDIST_METRICS_DIR"  # --metrics-port: where ranks announce their endpoints (metrics.py)
THREADS = "OMP_NUM_THREADS"
PASSED_THROUGH = ("ASCEND_RT_VISIBLE_DEVICES", "NPUDIST_DEVICE_COUNT", "NPUDIST_DEVICE_MEMORY", "NPUDIST_HOSTNAME",
                  "HCCL_SOCKET_IFNAME", "GLOO_SOCKET_IFNAME", "NPUDIST_FAULT_INJECT")


def job_tag() -> str:
    """The job's shared-memory tag: $NPUDIST_JOB_TAG if set, else a new random 12-hex-digit token."""
    return _env.get_str(JOB_TAG) or secrets.token_hex(6)


def usable_cores() -> int:
    """Cores this process may run on (its CPU affinity), at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def threads_per_rank(nproc: int, cores: int | None = None) -> list[int]:
    """Threads for each of ``nproc`` local ranks: the cores divided evenly, remainder to the
    first ranks, at least 1 each."""
    cores = usable_cores() if cores is None else cores
    base, extra = divmod(cores, nproc)
    return [max(1, base + (1 if r < extra else 0)) for r in range(nproc)]


def user_threads() -> str | None:
    """OMP_NUM_THREADS as the user set it, or None (then npurun divides the cores)."""
    return _env.get_str(THREADS)


def device_map(nproc: int) -> list[tuple[int, str]]:
    """(visible index, physical id) of the npu each local rank uses: local rank i -> npu:i.

    The physical id is the i-th entry of ASCEND_RT_VISIBLE_DEVICES (or i when unset);
    call only after torch.npu.device_count() accepted the environment.
    """
    visible = _env.raw("ASCEND_RT_VISIBLE_DEVICES")
    ids = [v.strip() for v in visible.split(",")] if visible else None
    return [(i, ids[i] if ids and i < len(ids) else str(i)) for i in range(nproc)]


def launcher_env(tag: str, profile_dir: str | None = None, profile_steps: str | None = None,
                 nnodes: str | None = None) -> dict[str, str]:
    """Variables npurun sets in its own environment so every rank inherits them (the module docstring's).

    With ``--profile DIR`` the ranks get ``NPUDIST_PROFILE_DIR`` (absolute) and
    ``NPUDIST_PROFILE_STEPS`` (npudist.profiler.step reads them).
    """
    env = {JOB_TAG: tag}
    if nnodes:
        env["NPUDIST_NNODES"] = nnodes
    if _env.raw(SHARE_STORE) is None:  # a fresh store per restart round (the module docstring)
        env[SHARE_STORE] = "1"
    env.update(_cann.apply(dict(os.environ)))  # CANN's variables where unset (npudist/_cann.py)
    if profile_dir:
        env["NPUDIST_PROFILE_DIR"] = os.path.abspath(profile_dir)
        if profile_steps:
            env["NPUDIST_PROFILE_STEPS"] = profile_steps
    return env
