"""``python -m npudist.plan predict``: step traces + a hardware file -> the predicted step (docs/plan.md).

:func:`predict` replays all ranks (npudist.plan.replay), computes msprof-analyze's columns per
rank and step (npudist.plan.report), the step time, tokens/s per device, MFU and the memory
peak per rank against the device's capacity (npudist.plan.memory).
"""
from __future__ import annotations

import dataclasses

from npudist.plan.hardware import Hardware
from npudist.plan.memory import GiB, MemoryPeak, does_not_fit_message, replay_memory
from npudist.plan.replay import RankTimeline, Replay
from npudist.plan.report import step_columns


@dataclasses.dataclass
class Prediction:
    """The prediction of one job. Times in seconds, memory in bytes."""
    step_time_s: float
    step_time_per_rank_s: dict[int, float]
    tokens_per_s_per_npu: float | None
    mfu: float
    mfu_dtype: str
    model_flops_per_step: float
    peaks: dict[int, MemoryPeak]
    capacity_bytes: int
    rows: list[dict]
    timelines: dict[int, RankTimeline]
    hardware: str
    measured_step_time_s: float | None

    @property
    def fits(self) -> bool:
        return all(p.peak_bytes <= self.capacity_bytes for p in self.peaks.values())

    @property
    def peak_memory_gib(self) -> float:
        return max((p.peak_bytes for p in self.peaks.values()), default=0) / GiB

    def not_fitting(self) -> list[str]:
        """One "does not fit" message per rank over capacity (largest peak first)."""
        over = sorted((p for p in self.peaks.values() if p.peak_bytes > self.capacity_bytes),
                      key=lambda p: -p.peak_bytes)
        return [does_not_fit_message(p, self.capacity_bytes) for p in over]

    def to_json(self) -> dict:
        """The keys ``--json OUT`` writes (docs/plan.md, "Output")."""
        return {
            "step_time_s": self.step_time_s,
            "step_time_per_rank_s": {str(k): v for k, v in self.step_time_per_rank_s.items()},
            "tokens_per_s_per_npu": self.tokens_per_s_per_npu,
            "mfu": self.mfu, "mfu_dtype": self.mfu_dtype, "model_flops_per_step": self.model_flops_per_step,
            "peak_memory_gib": self.peak_memory_gib,
            "peak_memory_gib_per_rank": {str(k): p.peak_bytes / GiB for k, p in self.peaks.items()},
            "capacity_gib": self.capacity_bytes / GiB,
            "fits": self.fits, "does_not_fit": self.not_fitting(),
            "memory_contributors": {str(k): [[op, b / GiB] for op, b in p.contributors[:8]]
                                    for k, p in self.peaks.items()},
            "measured_step_time_s": self.measured_step_time_s,
            "hardware": self.hardware,
            "columns": self.rows,
        }


def predict(traces: dict[int, dict], hw: Hardware, devices_per_node: int | None = None) -> Prediction:
    """Replays ``traces`` (rank -> step trace) on ``hw``; see the module doc. Raises ValueError when the
    traces cannot be replayed together (it names the ranks and the collectives)."""
    if not traces:
        raise ValueError("no step traces to predict from")
    timelines = Replay(traces, hw, devices_per_node).run()
    rows, per_rank = [], {}
    for rank, tl in sorted(timelines.items()):
        durs = []
        for step in sorted(tl.steps):
            rows.append(step_columns(tl, step))
            s, e = tl.steps[step]
            durs.append(e - s)
        per_rank[rank] = sum(durs) / len(durs) if durs else 0.0
    step_time = max(per_rank.values())
    by_dtype: dict[str, float] = {}
    flops_total = 0.0
    nsteps = 0
    for tl in timelines.values():
        for d, f in tl.flops_by_dtype.items():
            by_dtype[d] = by_dtype.get(d, 0.0) + f
        flops_total += sum(tl.flops.values())
        nsteps = max(nsteps, len(tl.steps))
    dtype = max(by_dtype, key=by_dtype.get) if by_dtype else "float32"
    ranks = len(timelines)
    flops_per_rank_step = flops_total / max(1, ranks) / max(1, nsteps)
    mfu = flops_per_rank_step / (step_time * hw.peak(dtype)) if step_time > 0 else 0.0
    tokens = [t.get("tokens_per_step") for t in traces.values()]
    tps = (sum(tokens) / len(tokens) / step_time) if tokens and all(tokens) and step_time > 0 else None
    measured = [sum(t["measured_step_us"]) / len(t["measured_step_us"]) * 1e-6
                for t in traces.values() if t.get("measured_step_us")]
    return Prediction(
        step_time_s=step_time, step_time_per_rank_s=per_rank, tokens_per_s_per_npu=tps, mfu=mfu, mfu_dtype=dtype,
        model_flops_per_step=flops_per_rank_step * ranks,
        peaks={r: replay_memory(t) for r, t in traces.items()}, capacity_bytes=hw.capacity_bytes, rows=rows,
        timelines=timelines, hardware=hw.name, measured_step_time_s=max(measured) if measured else None)
