"""The timeline replay: every rank's streams, host and collectives, with the trace's dependencies.

Each rank has a host clock and one clock per stream. Items are replayed in the rank's issue
order (docs/plan.md, "Method"):

- before each item the host clock moves by the item's ``host_gap_us`` (the recording host's own
  time before it: Python, dispatch, ops that are no device work; waits taken out) divided by
  the hardware's ``host_speed``;
- kernel / copy on stream S: starts at max(host, S) (host: a device can only run what was
  issued), lasts :func:`npudist.plan.cost.compute_time`; S moves to its end. The host moves by
  the hardware's ``host_us`` per op, or to the kernel's end when kernels run on the issuing
  thread (``host_blocking``, the simulated npu).
- collective issued from stream S onto communicator stream C: this rank arrives at
  max(host, S, C); the collective starts when the last rank of its group has arrived (a send
  and its recv form a group of two) and lasts :func:`npudist.plan.cost.collective_time`; C
  moves to its end.
- the host waiting for an event, a stream or the device (``synchronize()``) moves to that time;
- event recorded on S: the event takes S's time; stream S2 waiting for it moves to at least
  that time; a stream waiting for a collective (Work.wait()) moves to the collective's end,
  and so does the host when the wait blocks.
- a step ends when the host and all streams of the rank are done; the next step starts then.

A rank whose next item needs a collective its peers have not reached yet waits for them in
the replay; when no rank can move, the replay raises ValueError naming what each one waits for
(a trace whose ranks issue collectives in different orders).
"""
from __future__ import annotations

import dataclasses

from npudist.plan.cost import collective_time, compute_time
from npudist.plan.hardware import Hardware


@dataclasses.dataclass
class Interval:
    """One piece of a rank's predicted timeline (seconds from the start of the replay)."""
    start: float
    end: float
    kind: str      # "compute" | "comm"
    name: str
    stream: int
    step: int
    recv: bool = False


@dataclasses.dataclass
class RankTimeline:
    """What the replay found for one rank."""
    rank: int
    intervals: list[Interval]
    steps: dict[int, tuple[float, float]]  # step -> (start, end)
    flops: dict[int, float]                # step -> FLOPs the rank ran
    flops_by_dtype: dict[str, float]


class _Rank:
    def __init__(self, rank: int, trace: dict):
        self.rank = rank
        self.items = trace["ops"]
        self.i = 0
        self.host = 0.0
        self.streams: dict[int, object] = {}
        self.events: dict[int, object] = {}
        self.coll_keys: dict[tuple, tuple] = {}
        self.p2p_count: dict[tuple, int] = {}
        self.step: int | None = None
        self.gap_added = False
        self.step_start = 0.0
        self.out = RankTimeline(rank, [], {}, {}, {})

    def done(self) -> bool:
        return self.i >= len(self.items)


class Replay:
    """Replays the step traces of all ranks (``traces``: rank -> step trace) on ``hw``.

    ``devices_per_node``: how ranks map to nodes (rank // devices_per_node); default the
    hardware's devices per node. ``local_devices``: devices in use per node, for the share of a
    compute resource (default min(world size, devices per node)).
    """

    def __init__(self, traces: dict[int, dict], hw: Hardware, devices_per_node: int | None = None,
                 local_devices: int | None = None):
        self.hw = hw
        self.per_node = devices_per_node or hw.devices_per_node
        world = max(len(traces), max((t.get("world_size", 1) for t in traces.values()), default=1))
        self.share = hw.share(local_devices or min(world, self.per_node))
        self.ranks = {r: _Rank(r, t) for r, t in sorted(traces.items())}
        self.arrivals: dict[tuple, dict[int, float]] = {}
        self.expected: dict[tuple, set[int]] = {}
        self.meta: dict[tuple, dict] = {}
        self.resolved: dict[tuple, float] = {}
        self.started: dict[tuple, float] = {}
        self.pending: dict[tuple, list] = {}

    # --- values that may wait for a collective ---
    def _val(self, v) -> float | None:
        if isinstance(v, tuple):
            return self.resolved.get(v)
        return 0.0 if v is None else float(v)

    def run(self) -> dict[int, RankTimeline]:
        """Replays to the end; returns rank -> timeline. Raises ValueError on a deadlock (module doc)."""
        while True:
            moved = False
            for r in self.ranks.values():
                while not r.done():
                    if not self._step(r, r.items[r.i]):
                        break
                    r.i += 1
                    r.gap_added = False
                    moved = True
                if r.done() and r.step is not None and self._close_step(r):
                    moved = True
            moved |= self._resolve()
            if all(r.done() and r.step is None for r in self.ranks.values()):
                return {k: r.out for k, r in self.ranks.items()}
            if not moved:
                raise ValueError(self._deadlock())

    def _close_step(self, r: _Rank) -> bool:
        times = [self._val(v) for v in r.streams.values()]
        if any(t is None for t in times):
            return False
        end = max([r.host, *times])
        r.out.steps[r.step] = (r.step_start, end)
        r.host = end
        r.step = None
        return True

    def _step(self, r: _Rank, it: dict) -> bool:
        step = int(it.get("step", 0))
        if r.step is not None and step != r.step and not self._close_step(r):
            return False
        if r.step is None:
            r.step = step
            r.step_start = r.host
            r.out.flops.setdefault(step, 0.0)
        kind = it["kind"]
        hw = self.hw
        if not r.gap_added:  # the host's own time before the item, scaled to the target host
            r.host += float(it.get("host_gap_us", 0.0)) * 1e-6 / hw.host_speed
            r.gap_added = True
        if kind in ("kernel", "memcpy", "graph"):
            s = int(it.get("stream", 0))
            ready = self._val(r.streams.get(s))
            if ready is None:
                return False
            start = max(r.host, ready)
            dur = float(it["duration_us"]) * 1e-6 if "duration_us" in it else compute_time(hw, it, self.share)
            end = start + dur
            r.streams[s] = end
            r.host = end if hw.host_blocking else r.host + hw.host_s
            r.out.intervals.append(Interval(start, end, "compute", it.get("name", kind), s, step))
            f = float(it.get("flops", 0))
            r.out.flops[step] += f
            if f:
                dt = _dtype_of(it)
                r.out.flops_by_dtype[dt] = r.out.flops_by_dtype.get(dt, 0.0) + f
            return True
        if kind == "collective":
            c, s = int(it["stream"]), int(it.get("issue_stream", 0))
            a, b = self._val(r.streams.get(c)), self._val(r.streams.get(s))
            if a is None or b is None:
                return False
            key, group = self._key(r, it)
            arrive = max(r.host, a, b)
            self.arrivals.setdefault(key, {})[r.rank] = arrive
            self.expected[key] = set(group)
            if key not in self.meta:
                nbytes = int(it.get("bytes", 0))
                self.meta[key] = {"name": it["name"], "group": group, "bytes": nbytes,
                                  "duration": (float(it["duration_us"]) * 1e-6 if "duration_us" in it else
                                               collective_time(hw, it["name"], nbytes, group, self.per_node))}
            self.pending.setdefault(key, []).append((r, arrive, c, it["name"], step, it["name"] == "recv"))
            r.streams[c] = key
            r.host += hw.host_s
            return True
        if kind == "record":
            r.events[int(it["event"])] = r.streams.get(int(it["stream"]), 0.0)
            return True
        if kind == "wait_event":
            s = int(it["stream"])
            a, b = self._val(r.streams.get(s)), self._val(r.events.get(int(it["event"])))
            if a is None or b is None:
                return False
            r.streams[s] = max(a, b)
            return True
        if kind == "wait_collective":
            key = r.coll_keys.get(("p" if it.get("is_p2p") else "c", str(it["pg"]), int(it["seq"])))
            s = int(it["stream"])
            a = self._val(r.streams.get(s))
            b = 0.0 if key is None else self.resolved.get(key)
            if a is None or b is None:
                return False
            r.streams[s] = max(a, b)
            if it.get("blocking"):
                r.host = max(r.host, b)
            return True
        if kind in ("sync_event", "sync_stream", "sync_device"):  # the host waits for device work
            if kind == "sync_event":
                t = self._val(r.events.get(int(it.get("event", 0))))
            elif kind == "sync_stream":
                t = self._val(r.streams.get(int(it["stream"])))
            else:
                ts = [self._val(v) for v in r.streams.values()]
                t = None if any(x is None for x in ts) else max(ts, default=0.0)
            if t is None:
                return False
            r.host = max(r.host, t)
            return True
        raise ValueError(f"rank {r.rank}: step-trace item {r.i} has unknown kind {kind!r}")

    def _key(self, r: _Rank, it: dict) -> tuple[tuple, list[int]]:
        pg, seq = str(it.get("pg", "")), int(it.get("seq", 0))
        if it.get("is_p2p") or it["name"] in ("send", "recv"):
            peer = int(it.get("peer", -1))
            src, dst = (r.rank, peer) if it["name"] == "send" else (peer, r.rank)
            n = r.p2p_count.get((src, dst), 0)
            r.p2p_count[(src, dst)] = n + 1
            key = ("p2p", src, dst, n)
            r.coll_keys[("p", pg, seq)] = key
            return key, [src, dst]
        key = ("coll", pg, seq)
        r.coll_keys[("c", pg, seq)] = key
        return key, list(it.get("group_ranks") or [r.rank])

    def _resolve(self) -> bool:
        moved = False
        for key in list(self.pending):
            arr = self.arrivals[key]
            if not self.expected[key] <= set(arr):
                continue
            start = max(arr.values())
            end = start + self.meta[key]["duration"]
            self.resolved[key] = end
            self.started[key] = start
            for r, arrive, c, name, step, recv in self.pending.pop(key):
                r.out.intervals.append(Interval(arrive, end, "comm", name, c, step, recv))
            moved = True
        return moved

    def _deadlock(self) -> str:
        lines = ["the replay cannot go on: every rank waits for a collective its peers never reach (ranks issue "
                 "collectives in different orders, or a trace is missing a rank):"]
        for r in self.ranks.values():
            if r.done():
                continue
            it = r.items[r.i]
            waiting = [f"{self.meta[k]['name']} {k} (arrived: {sorted(self.arrivals[k])}, group: "
                       f"{sorted(self.expected[k])})" for k in self.pending if r.rank in self.arrivals.get(k, {})]
            lines.append(f"  rank {r.rank} at item {r.i} ({it['kind']} {it.get('name', '')}, step {it.get('step')}); "
                         f"waiting on: {'; '.join(waiting) or 'nothing issued'}")
        return "\n".join(lines)


def _dtype_of(it: dict) -> str:
    for t in it.get("inputs", []):
        if isinstance(t, dict) and str(t.get("dtype", "")).startswith(("float", "bfloat")):
            return t["dtype"]
    return it.get("dtype", "float32")
