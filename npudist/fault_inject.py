"""Fault injection: rehearse hung, dead, slow and out-of-memory ranks, a lost store and a
network partition against your own job (docs/fault_injection.md).

``NPUDIST_FAULT_INJECT`` (or ``npurun --inject-fault SPEC``, repeatable) holds specs separated
by ``;``; a spec is ``key=value`` fields separated by ``,``::

    rank=1,collective=120,kind=hang      rank 1 never joins its 120th collective
    rank=2,step=50,kind=kill             rank 2 is SIGKILLed at its 50th step
    rank=1,ckpt_write=2,kind=kill        rank 1 is SIGKILLed half-way through writing its 2nd checkpoint
    rank=0,kind=slow,delay_ms=30,every=4 every 4th collective of rank 0 starts 30 ms late
    rank=3,kind=oom,alloc=1000           rank 3's 1000th npu allocation raises torch.OutOfMemoryError
    kind=store_down,after_s=20           the store hccl talks through stops answering after 20 s
    rank=1,kind=partition,peers=0+2      rank 1's collectives with ranks 0 and 2 on other hosts stall

Counters (per process, from 1): *collective* counts every operation the hccl backend runs,
over all groups (collectives, point-to-point ops; a coalesced batch is one); *alloc* counts
npu allocations of non-zero size; *step* counts ``npudist.watchdog.metrics.record_step()``
calls (the training-step metric), or, in a process that never calls it,
``torch.optim.Optimizer.step()`` calls; *ckpt_write* counts DCP saves written through
``npudist.fsdp.checkpoint_writer`` (sync or async). Fields common to all
kinds: ``rank`` (global rank, ``$RANK``; omitted: every rank) and ``restart`` (the attempt of
``npurun --max-restarts`` in which the fault fires, ``$TORCHELASTIC_RESTART_COUNT``; default
0, ``*`` every attempt). The faults fire inside the runtime (hccl engine, allocator, store
client), so the watchdog, flight recorder, metrics and npurun see what a real fault shows;
each one says so once on stderr, ``[npudist fault] rank R: ... (injected: SPEC)``.

Raises:
    FaultSpecError (a ValueError): a spec is malformed; the message names the spec, the
        field that is wrong and what is allowed.
"""
from __future__ import annotations

import dataclasses
import os
import signal
import sys

from npudist import _env

ENV = "NPUDIST_FAULT_INJECT"
KINDS = ("hang", "kill", "slow", "oom", "store_down", "partition")
COMMON = ("kind", "rank", "restart")
# kind -> (required fields, optional fields)
FIELDS = {
    "hang": (("collective",), ()),
    "kill": ((), ("step", "ckpt_write")),  # exactly one of the two
    "slow": (("delay_ms",), ("every",)),
    "oom": (("alloc",), ()),
    "store_down": (("after_s",), ()),
    "partition": (("rank", "peers"), ("collective",)),
}
_ALL_FIELDS = ("kind", "rank", "restart", "collective", "step", "ckpt_write", "every", "delay_ms", "alloc", "after_s",
               "peers")


class FaultSpecError(ValueError):
    """A malformed fault spec; the message names the spec and the wrong part."""


@dataclasses.dataclass(frozen=True)
class FaultSpec:
    """One parsed fault. Counters count from 1; ``rank`` None: every rank; ``restart`` None: every attempt."""

    kind: str
    text: str
    rank: int | None = None
    restart: int | None = 0
    collective: int | None = None
    step: int | None = None
    ckpt_write: int | None = None
    every: int = 1
    delay_ms: int | None = None
    alloc: int | None = None
    after_s: float | None = None
    peers: tuple[int, ...] = ()

    def applies_to(self, rank: int, restart: int) -> bool:
        """True if this fault fires in the process of global ``rank`` in attempt ``restart``."""
        return (self.rank is None or self.rank == rank) and (self.restart is None or self.restart == restart)

    def to_native(self) -> dict:
        """The dict npudist._C._fault_configure takes."""
        d = dataclasses.asdict(self)
        d["peers"] = list(self.peers)
        d.pop("ckpt_write")  # counted in Python (kill faults never reach the native side)
        return d


def _int(where: str, key: str, value: str, minimum: int) -> int:
    try:
        n = int(value, 10)
    except ValueError:
        raise FaultSpecError(f"{where}: {key}={value!r} is not an integer") from None
    if n < minimum:
        raise FaultSpecError(f"{where}: {key}={value} must be >= {minimum}")
    return n


def parse_one(text: str, where: str = "fault spec") -> FaultSpec:
    """Parses one spec (``key=value`` fields separated by ``,``); raises FaultSpecError naming the wrong part."""
    where = f"{where} {text!r}"
    fields: dict[str, str] = {}
    for part in text.split(","):
        part = part.strip()
        if not part:
            raise FaultSpecError(f"{where}: empty field (two commas, or a trailing comma)")
        key, eq, value = part.partition("=")
        key, value = key.strip(), value.strip()
        if not eq or not value:
            raise FaultSpecError(f"{where}: field {part!r} is not key=value")
        if key not in _ALL_FIELDS:
            raise FaultSpecError(f"{where}: unknown field {key!r}; fields are {', '.join(_ALL_FIELDS)}")
        if key in fields:
            raise FaultSpecError(f"{where}: field {key!r} given twice")
        fields[key] = value
    kind = fields.get("kind")
    if kind is None:
        raise FaultSpecError(f"{where}: no kind=; one of {', '.join(KINDS)}")
    if kind not in KINDS:
        raise FaultSpecError(f"{where}: kind {kind!r} is not one of {', '.join(KINDS)}")
    required, optional = FIELDS[kind]
    for key in required:
        if key not in fields:
            raise FaultSpecError(f"{where}: kind={kind} needs {key}= (fields of {kind}: "
                                 f"{', '.join(dict.fromkeys(required + optional + COMMON[1:]))})")
    if kind == "kill" and ("step" in fields) == ("ckpt_write" in fields):
        raise FaultSpecError(f"{where}: kind=kill needs exactly one of step= (the Nth training step) or "
                             f"ckpt_write= (the Nth checkpoint write)")
    allowed = set(required) | set(optional) | set(COMMON)
    for key in fields:
        if key not in allowed:
            raise FaultSpecError(f"{where}: field {key!r} does not apply to kind={kind} (fields of {kind}: "
                                 f"{', '.join(dict.fromkeys(required + optional + COMMON[1:]))})")
    kw: dict = {"kind": kind, "text": text.strip()}
    if "rank" in fields:
        kw["rank"] = _int(where, "rank", fields["rank"], 0)
    if "restart" in fields:
        kw["restart"] = None if fields["restart"] == "*" else _int(where, "restart", fields["restart"], 0)
    for key in ("collective", "step", "ckpt_write", "every", "alloc"):
        if key in fields:
            kw[key] = _int(where, key, fields[key], 1)
    if "delay_ms" in fields:
        kw["delay_ms"] = _int(where, "delay_ms", fields["delay_ms"], 1)
    if "after_s" in fields:
        try:
            after = float(fields["after_s"])
        except ValueError:
            raise FaultSpecError(f"{where}: after_s={fields['after_s']!r} is not a number of seconds") from None
        if not after >= 0 or after == float("inf"):
            raise FaultSpecError(f"{where}: after_s={fields['after_s']} must be a finite number >= 0")
        kw["after_s"] = after
    if "peers" in fields:
        peers = tuple(_int(where, "peers", p.strip(), 0) for p in fields["peers"].split("+"))
        if len(set(peers)) != len(peers):
            raise FaultSpecError(f"{where}: peers={fields['peers']} names a rank twice")
        if kw.get("rank") in peers:
            raise FaultSpecError(f"{where}: peers={fields['peers']} includes the rank itself ({kw['rank']})")
        kw["peers"] = peers
    return FaultSpec(**kw)


def parse(text: str, source: str = ENV) -> list[FaultSpec]:
    """Parses ``;``-separated specs (blank pieces ignored); raises FaultSpecError naming the wrong part."""
    pieces = [p for p in text.split(";") if p.strip()]
    return [parse_one(p.strip(), f"{source}: spec {i + 1}") for i, p in enumerate(pieces)]


def check_world(specs: list[FaultSpec], world_size: int, source: str = ENV) -> None:
    """Raises FaultSpecError if a spec names a rank (or peer) outside ``range(world_size)``."""
    for s in specs:
        for r in ((s.rank,) if s.rank is not None else ()) + s.peers:
            if r >= world_size:
                raise FaultSpecError(f"{source}: spec {s.text!r} names rank {r}, but the job has {world_size} "
                                     f"ranks (0..{world_size - 1})")


# The step counter (kill faults).
_kill: list[FaultSpec] = []
_steps = {"explicit": 0, "optimizer": 0, "mode": "optimizer", "ckpt_write": 0}
_hook = None


def _kill_now(spec: FaultSpec, n: int) -> None:
    rank = _env.get_str("RANK", "0")
    sys.stdout.flush()
    sys.stderr.write(f"[npudist fault] rank {rank}: SIGKILL at step {n} (injected: {spec.text})\n")
    sys.stderr.flush()
    os.kill(os.getpid(), signal.SIGKILL)


def _count(mode: str) -> None:
    n = _steps[mode] = _steps[mode] + 1
    for spec in _kill:
        if spec.step == n:
            _kill_now(spec, n)


def count_ckpt_write() -> tuple[int, FaultSpec | None]:
    """Counts one checkpoint write of this process (``npudist.fsdp.checkpoint_writer`` calls it
    when DCP asks this rank to write its data); returns (the count, from 1; the
    ``kind=kill,ckpt_write=N`` spec that fires on it or None). The caller kills the process
    half-way through the write with ``kill_during_write``."""
    n = _steps["ckpt_write"] = _steps["ckpt_write"] + 1
    return n, next((s for s in _kill if s.ckpt_write == n), None)


def kill_during_write(spec: FaultSpec, n: int, what: str) -> None:
    """SIGKILLs this process in the middle of checkpoint write #n (``what``: the file being
    written), saying so on stderr first."""
    rank = _env.get_str("RANK", "0")
    sys.stdout.flush()
    sys.stderr.write(f"[npudist fault] rank {rank}: SIGKILL during checkpoint write #{n} ({what}) "
                     f"(injected: {spec.text})\n")
    sys.stderr.flush()
    os.kill(os.getpid(), signal.SIGKILL)


def count_step() -> int:
    """Counts one training step of this process (``npudist.watchdog.metrics.record_step`` calls
    it); returns the count.

    The step counter of ``kind=kill`` faults: once a process records steps, only recorded
    steps count (otherwise each ``torch.optim.Optimizer.step()`` does). Cheap: a counter increment.
    """
    global _hook
    if _steps["mode"] != "explicit":
        _steps["mode"] = "explicit"
        if _hook is not None:
            _hook.remove()
            _hook = None
    _count("explicit")
    return _steps["explicit"]


def _optimizer_step(optimizer, args, kwargs) -> None:
    if _steps["mode"] == "optimizer":
        _count("optimizer")


def configure(specs: list[FaultSpec], rank: int, restart: int = 0) -> list[FaultSpec]:
    """Makes the specs that apply to ``rank`` in attempt ``restart`` this process's faults.

    Replaces any earlier configuration and restarts the counters; returns the applied specs.
    """
    global _hook
    from npudist import _C

    mine = [s for s in specs if s.applies_to(rank, restart)]
    _C._fault_configure([s.to_native() for s in mine if s.kind != "kill"], rank)
    _kill[:] = [s for s in mine if s.kind == "kill"]
    _steps.update(explicit=0, optimizer=0, ckpt_write=0)
    if any(s.step for s in _kill) and _hook is None and _steps["mode"] == "optimizer":
        from torch.optim.optimizer import register_optimizer_step_post_hook

        _hook = register_optimizer_step_post_hook(_optimizer_step)
    return mine


def configure_from_env() -> list[FaultSpec]:
    """Reads NPUDIST_FAULT_INJECT, $RANK (default 0) and $TORCHELASTIC_RESTART_COUNT (default 0)."""
    text = _env.get_str(ENV, "")
    specs = parse(text)
    if not specs:
        return []
    rank = _env.get_int("RANK", 0, lo=0)
    restart = _env.get_int("TORCHELASTIC_RESTART_COUNT", 0, lo=0)
    return configure(specs, rank, restart)


def counts() -> dict:
    """How far this process has counted since configuration: collectives, allocations (only
    counted while a fault is configured) and steps."""
    from npudist import _C

    d = dict(_C._fault_counts())
    d["steps"] = _steps[_steps["mode"]]
    d["ckpt_writes"] = _steps["ckpt_write"]
    return d
