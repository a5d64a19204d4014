"""Peak device memory per rank from a step trace's allocator events (docs/plan.md, "Memory").

The events are the caching allocator's blocks (sizes after its rounding), so the replayed peak
means what ``torch.npu.max_memory_allocated()`` means: bytes in allocated blocks, not the
reserved segments around them. Everything allocated before the first traced step (parameters,
optimizer state, gradients kept across steps, ...) is the trace's baseline.
"""
from __future__ import annotations

import dataclasses

GiB = 1024 ** 3
BASELINE = "allocated before the traced steps (parameters, optimizer state, buffers)"


@dataclasses.dataclass
class MemoryPeak:
    """A rank's predicted peak: bytes, when (step), and the live bytes at the peak grouped by the op that
    allocated them, largest first."""
    rank: int
    peak_bytes: int
    step: int | None
    contributors: list[tuple[str, int]]


def replay_memory(trace: dict) -> MemoryPeak:
    """Replays the allocator events of one rank's step trace; the peak and what was live at it."""
    mem = trace.get("memory") or {}
    base = int(mem.get("baseline_allocated", 0))
    live: dict[int, tuple[int, str]] = {}
    cur, peak, peak_step, peak_live = base, base, None, {}
    anon = 0
    for ev in mem.get("events", []):
        b = int(ev["bytes"])
        addr = int(ev.get("addr", 0)) or -(anon := anon + 1)
        if b > 0:
            live[addr] = (b, ev.get("op", "?"))
        else:
            live.pop(addr, None)
        cur += b
        if cur > peak:
            peak, peak_step = cur, ev.get("step")
            peak_live = dict(live)
    groups: dict[str, int] = {}
    for b, op in peak_live.values():
        groups[op] = groups.get(op, 0) + b
    # frees of blocks allocated before the trace lower the baseline's share at the peak
    before = peak - sum(groups.values())
    if before:
        groups[BASELINE] = groups.get(BASELINE, 0) + before
    return MemoryPeak(int(trace.get("rank", 0)), peak, peak_step,
                      sorted(groups.items(), key=lambda kv: -kv[1]))


def does_not_fit_message(p: MemoryPeak, capacity: int, top: int = 5) -> str:
    """The "does not fit" message: rank, predicted peak, capacity and the largest contributors."""
    parts = ", ".join(f"{op} {b / GiB:.3f} GiB" for op, b in p.contributors[:top])
    where = f" in step {p.step}" if p.step is not None else ""
    return (f"does not fit: rank {p.rank} needs {p.peak_bytes / GiB:.3f} GiB{where}, the device has "
            f"{capacity / GiB:.3f} GiB; largest at the peak: {parts}")
