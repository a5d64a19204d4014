"""The launch plan: what npurun will start, shown by --dry-run.

Built from the validated arguments before anything starts: nodes, rendezvous, the
command, and per local rank its global rank (when the rendezvous fixes it in advance),
its npu, its threads and the environment torch's agent and npurun set.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field

from npudist import _shm_names

from . import env as npuenv


@dataclass
class RankPlan:
    """One local rank: its ranks, npu and thread count."""
    local_rank: int
    global_rank: int | None  # None: assigned by the rendezvous
    device: int
    physical_id: str
    threads: str


@dataclass
class Plan:
    """Everything npurun decided before starting the agent."""
    nnodes: str
    nproc: int
    node_rank: int | None
    rdzv_backend: str
    rdzv_endpoint: str
    rdzv_id: str
    command: list[str]
    job_tag: str
    log_dir: str
    max_restarts: int
    grace_seconds: int
    ranks: list[RankPlan] = field(default_factory=list)
    world_size: int | None = None
    metrics_endpoint: str | None = None  # --metrics-port: the node's endpoint

    def rank_env(self, r: RankPlan) -> dict[str, str]:
        """Environment a rank starts with (beyond the launcher's own), '?' where the rendezvous decides."""
        unknown = "(rendezvous)"
        envs = {
            "RANK": str(r.global_rank) if r.global_rank is not None else unknown,
            "LOCAL_RANK": str(r.local_rank),
            "WORLD_SIZE": str(self.world_size) if self.world_size is not None else unknown,
            "LOCAL_WORLD_SIZE": str(self.nproc),
            "GROUP_RANK": str(self.node_rank) if self.node_rank is not None else unknown,
            "MASTER_ADDR": unknown, "MASTER_PORT": unknown,
            "TORCHELASTIC_RUN_ID": self.rdzv_id,
            "TORCHELASTIC_RESTART_COUNT": "0..%d" % self.max_restarts if self.max_restarts else "0",
            npuenv.JOB_TAG: self.job_tag,
            npuenv.THREADS: r.threads,
        }
        if self.metrics_endpoint:
            envs[npuenv.METRICS_DIR] = "(a directory of the job, removed at exit)"
        return envs

    def format(self) -> str:
        """The human-readable plan --dry-run prints."""
        lines = [
            "npurun plan (dry run: nothing was started)",
            f"  nodes            : {self.nnodes}" + (f" (this node: rank {self.node_rank})" if self.node_rank is not None else ""),
            f"  ranks per node   : {self.nproc}" + (f"  world size {self.world_size}" if self.world_size else ""),
            f"  rendezvous       : {self.rdzv_backend} at {self.rdzv_endpoint or '(none)'} id {self.rdzv_id}",
            f"  command          : {' '.join(self.command)}",
            f"  max restarts     : {self.max_restarts}",
            f"  stop grace       : SIGTERM, then SIGKILL after {self.grace_seconds} s",
            f"  logs             : {self.log_dir}",
            f"  shm job tag      : {self.job_tag} (/dev/shm/{_shm_names.job_prefix(self.job_tag)}* removed at exit)",
            "  metrics          : " + (self.metrics_endpoint or "off (--metrics-port PORT serves the node's ranks)"),
            "  ranks:",
        ]
        for r in self.ranks:
            g = r.global_rank if r.global_rank is not None else "(rendezvous)"
            lines.append(f"    local rank {r.local_rank}: rank {g}, device npu:{r.device} (physical {r.physical_id}), "
                         f"OMP_NUM_THREADS={r.threads}")
        lines.append("  environment of local rank 0:")
        if self.ranks:
            for k, v in self.rank_env(self.ranks[0]).items():
                lines.append(f"    {k}={v}")
        for k in npuenv.PASSED_THROUGH:
            if k in os.environ:
                lines.append(f"    {k}={os.environ[k]} (inherited)")
        return "\n".join(lines)
