"""Synthetic step traces for the predictor's tests: the format of docs/plan.md, written by hand."""
from __future__ import annotations

from npudist.plan.trace import STEP_TRACE_FORMAT, STEP_TRACE_VERSION

COMM = 7  # the communicator's stream in these traces
SEND, RECV = 8, 9


def trace(rank: int, world: int, ops: list[dict], memory: dict | None = None, tokens: int | None = None) -> dict:
    """A step trace of one rank; ops without "step" belong to step 1."""
    for o in ops:
        o.setdefault("step", 1)
    return {"format": STEP_TRACE_FORMAT, "version": STEP_TRACE_VERSION, "source": "synthetic", "rank": rank,
            "world_size": world, "device": rank, "steps": sorted({o["step"] for o in ops}), "tokens_per_step": tokens,
            "ops": ops, "memory": memory or {"baseline_allocated": 0, "events": []}}


def kernel(us: float, stream: int = 0, name: str = "aten::work", **kw) -> dict:
    return {"kind": "kernel", "name": name, "stream": stream, "duration_us": us, "inputs": [], "outputs": [], **kw}


def collective(name: str, seq: int, ranks: list[int], nbytes: int = 0, us: float | None = None, stream: int = COMM,
               issue_stream: int = 0, pg: str = "0", peer: int = -1) -> dict:
    c = {"kind": "collective", "name": name, "pg": pg, "seq": seq, "group_ranks": ranks, "peer": peer,
         "is_p2p": name in ("send", "recv"), "dtype": "float32", "bytes": nbytes, "stream": stream,
         "issue_stream": issue_stream}
    if us is not None:
        c["duration_us"] = us
    return c


def wait(seq: int, stream: int = 0, pg: str = "0", p2p: bool = False) -> dict:
    return {"kind": "wait_collective", "stream": stream, "pg": pg, "seq": seq, "is_p2p": p2p, "blocking": False}


def one_f_one_b(p: int, m: int, f_us: float, b_us: float) -> dict[int, dict]:
    """Step traces of a 1F1B pipeline of ``p`` stages and ``m`` microbatches (p2p of zero cost): each
    stage runs min(p - s - 1, m) warm-up forwards, then alternates 1F1B, then drains its backwards."""
    traces = {}
    for s in range(p):
        ops, seq = [], [0]

        def p2p(name, peer, stream):
            seq[0] += 1
            ops.append(collective(name, seq[0], [s, peer], 4096, us=0.0, stream=stream, peer=peer))
            return seq[0]

        def fwd(i):
            if s > 0:
                ops.append(wait(p2p("recv", s - 1, RECV), p2p=True))
            ops.append(kernel(f_us, name=f"forward {i}"))
            if s < p - 1:
                p2p("send", s + 1, SEND)

        def bwd(i):
            if s < p - 1:
                ops.append(wait(p2p("recv", s + 1, RECV), p2p=True))
            ops.append(kernel(b_us, name=f"backward {i}"))
            if s > 0:
                p2p("send", s - 1, SEND)

        warm = min(p - s - 1, m)
        for i in range(warm):
            fwd(i)
        for i in range(m - warm):
            fwd(warm + i)
            bwd(i)
        for i in range(m - warm, m):
            bwd(i)
        traces[s] = trace(s, p, ops)
    return traces
