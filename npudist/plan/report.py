"""What a prediction reports: msprof-analyze's per-rank step columns, the summary, the timeline.

Columns (msprof-analyze's cluster_step_trace_time.csv, one row per rank and step, times in µs as
msprof-analyze writes them), from the replayed intervals of a step (C: union of compute, M: union
of communication, R: union of receives)::

    Computing = |C|            Communication = |M|         Overlapped = |C ∩ M|
    Communication(Not Overlapped) = |M \\ C|               Free = step - |C ∪ M|
    Bubble = |R \\ C|           Stage = step - Bubble
    Communication(Not Overlapped and Exclude Receive) = |(M \\ R) \\ C|
    Preparing = first device activity of the step - start of the step
"""
from __future__ import annotations

import json

from npudist.plan.replay import Interval, RankTimeline

COLUMNS = ["Step", "Type", "Index", "Computing", "Communication(Not Overlapped)", "Overlapped", "Communication",
           "Free", "Stage", "Bubble", "Communication(Not Overlapped and Exclude Receive)", "Preparing"]


def _union(iv: list[tuple[float, float]]) -> list[tuple[float, float]]:
    out: list[list[float]] = []
    for s, e in sorted(iv):
        if e <= s:
            continue
        if out and s <= out[-1][1]:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([s, e])
    return [(s, e) for s, e in out]


def _length(iv: list[tuple[float, float]]) -> float:
    return sum(e - s for s, e in iv)


def _intersect(a: list[tuple[float, float]], b: list[tuple[float, float]]) -> list[tuple[float, float]]:
    out, i, j = [], 0, 0
    while i < len(a) and j < len(b):
        s, e = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        if s < e:
            out.append((s, e))
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return out


def _minus(a, b):
    return _length(a) - _length(_intersect(a, b))


def step_columns(tl: RankTimeline, step: int) -> dict:
    """msprof-analyze's columns for one rank and step (µs)."""
    s0, s1 = tl.steps[step]
    ivs: list[Interval] = [i for i in tl.intervals if i.step == step]
    comp = _union([(i.start, i.end) for i in ivs if i.kind == "compute"])
    comm = _union([(i.start, i.end) for i in ivs if i.kind == "comm"])
    recv = _union([(i.start, i.end) for i in ivs if i.kind == "comm" and i.recv])
    comm_no_recv = _union([(i.start, i.end) for i in ivs if i.kind == "comm" and not i.recv])
    step_t = s1 - s0
    overlapped = _length(_intersect(comp, comm))
    bubble = _minus(recv, comp)
    first = min((i.start for i in ivs), default=s0)
    us = 1e6
    return {
        "Step": step, "Type": "rank", "Index": tl.rank,
        "Computing": _length(comp) * us,
        "Communication(Not Overlapped)": _minus(comm, comp) * us,
        "Overlapped": overlapped * us,
        "Communication": _length(comm) * us,
        "Free": (step_t - _length(_union(comp + comm))) * us,
        "Stage": (step_t - bubble) * us,
        "Bubble": bubble * us,
        "Communication(Not Overlapped and Exclude Receive)": _minus(comm_no_recv, comp) * us,
        "Preparing": (first - s0) * us,
    }


def format_table(rows: list[dict]) -> str:
    """The rows as a fixed-width table (µs, one decimal)."""
    heads = ["Step", "Type", "Index", "Computing", "Comm(NotOvl)", "Overlapped", "Communication", "Free", "Stage",
             "Bubble", "Comm(NotOvl,ExclRecv)", "Preparing"]
    widths = [max(len(h), 10) for h in heads]
    lines = ["  ".join(h.rjust(w) for h, w in zip(heads, widths, strict=True))]
    for r in rows:
        vals = [str(r[c]) if isinstance(r[c], (str, int)) else f"{r[c]:.1f}" for c in COLUMNS]
        lines.append("  ".join(v.rjust(w) for v, w in zip(vals, widths, strict=True)))
    return "\n".join(lines)


def chrome_trace(timelines: dict[int, RankTimeline], path: str) -> None:
    """Writes the predicted timeline as a Chrome/Perfetto trace: one process per rank, one thread per stream."""
    ev = []
    for rank, tl in timelines.items():
        ev.append({"ph": "M", "name": "process_name", "pid": rank, "args": {"name": f"rank {rank} (predicted)"}})
        for s in sorted({i.stream for i in tl.intervals}):
            ev.append({"ph": "M", "name": "thread_name", "pid": rank, "tid": s + 1,
                       "args": {"name": f"stream {s + 1} (stream_id {s})"}})
        for i in tl.intervals:
            ev.append({"ph": "X", "name": i.name, "cat": i.kind, "pid": rank, "tid": i.stream + 1,
                       "ts": round(i.start * 1e6, 3), "dur": round((i.end - i.start) * 1e6, 3),
                       "args": {"step": i.step}})
        for step, (s, e) in tl.steps.items():
            ev.append({"ph": "X", "name": f"ProfilerStep#{step}", "cat": "step", "pid": rank, "tid": 0,
                       "ts": round(s * 1e6, 3), "dur": round((e - s) * 1e6, 3)})
    with open(path, "w", encoding="utf-8") as f:
        json.dump({"traceEvents": ev, "displayTimeUnit": "ms"}, f)


def bar_chart(rows: list[dict], path: str, title: str) -> None:
    """A PNG of stacked bars per rank (mean over steps): compute only, overlapped, exposed comm, free.

    Needs matplotlib (``pip install matplotlib``); raises ImportError saying so otherwise.
    """
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise ImportError("the PNG chart needs matplotlib: pip install matplotlib (or leave out --png)") from None
    ranks = sorted({r["Index"] for r in rows})
    parts = [("Computing only", lambda r: r["Computing"] - r["Overlapped"], "#4c72b0"),
             ("Overlapped", lambda r: r["Overlapped"], "#55a868"),
             ("Communication (not overlapped)", lambda r: r["Communication(Not Overlapped)"], "#c44e52"),
             ("Free", lambda r: r["Free"], "#cccccc")]
    fig, ax = plt.subplots(figsize=(max(4, len(ranks) * 0.8 + 2), 4))
    bottom = [0.0] * len(ranks)
    for label, fn, color in parts:
        vals = []
        for rk in ranks:
            rr = [r for r in rows if r["Index"] == rk]
            vals.append(sum(fn(r) for r in rr) / len(rr) / 1e3)
        ax.bar([str(r) for r in ranks], vals, bottom=bottom, label=label, color=color)
        bottom = [b + v for b, v in zip(bottom, vals, strict=True)]
    ax.set_xlabel("rank")
    ax.set_ylabel("ms per step (mean)")
    ax.set_title(title)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
