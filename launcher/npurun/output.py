"""Rank output and the closing summary.

Every rank's stdout and stderr go to files (``<log dir>/<run id>_*/attempt_<n>/<local
rank>/{stdout,stderr}.log``, torch's layout) and are tailed to the console with a
``[rank<N>]: `` prefix by torch's TailLog (``log_line_prefix_template``). --redirects
removes streams from the console as in torchrun; --tee and --local-ranks-filter work as
in torchrun. Without --log-dir the files go to a temporary directory that is removed
after a successful run and kept (and named in the summary) after a failure.
"""
from __future__ import annotations

import os
import re
import signal
from collections.abc import Callable
from dataclasses import dataclass, field

from torch.distributed.elastic.multiprocessing import DefaultLogsSpecs, LogsDest, Std

DEFAULT_PREFIX = "[rank${rank}]: "


def console_streams(redirects: dict[int, Std], tee: dict[int, Std]) -> dict[int, Std]:
    """Streams of each local rank shown on the console: all but those redirected (and not tee'd)."""
    return {r: Std.ALL & ~(redirects[r] & ~tee.get(r, Std.NONE)) for r in redirects}


class NpurunLogsSpecs(DefaultLogsSpecs):
    """DefaultLogsSpecs that always writes both streams to files and tees ``console`` ones.

    ``reify`` (torch calls it once per attempt, after the previous attempt's workers were
    stopped and before the new ones start) also runs ``before_attempt(attempt)`` and sets
    per-rank ``extra_env`` (e.g. OMP_NUM_THREADS), and records where each attempt's logs are.
    """

    def __init__(self, log_dir: str, console: dict[int, Std], local_ranks_filter: set[int] | None,
                 extra_env: dict[int, dict[str, str]] | None = None,
                 before_attempt: Callable[[int], None] | None = None):
        super().__init__(log_dir=log_dir, redirects=Std.ALL, tee=console, local_ranks_filter=local_ranks_filter)
        self.extra_env = extra_env or {}
        self.before_attempt = before_attempt
        self.attempts: list[LogsDest] = []
        self.envs: dict[int, dict[str, str]] = {}  # the last attempt's rank environments

    def reify(self, envs: dict[int, dict[str, str]]) -> LogsDest:
        """Log destinations of one attempt (see the class docstring for what else happens here)."""
        if self.before_attempt is not None:
            self.before_attempt(len(self.attempts))
        for local_rank, env in envs.items():
            env.update(self.extra_env.get(local_rank, {}))
        self.envs = envs
        dest = super().reify(envs)
        self.attempts.append(dest)
        return dest

    def attempt_dir(self) -> str | None:
        """Directory of the last attempt's per-rank logs (None before any attempt)."""
        if not self.attempts:
            return None
        any_file = next(iter(self.attempts[-1].stderrs.values()), None)
        return os.path.dirname(os.path.dirname(any_file)) if any_file else None

    def stderr_file(self, local_rank: int) -> str | None:
        """Last attempt's stderr log of ``local_rank``."""
        return self.attempts[-1].stderrs.get(local_rank) if self.attempts else None


_TRACEBACK = "Traceback (most recent call last):"
_RANK_PREFIX = re.compile(r"^\[rank\d+\]:\s?")
_ERRORISH = re.compile(r"error|exception|fatal|abort|killed", re.IGNORECASE)


def first_error_line(path: str | None, limit: int = 4 << 20) -> str | None:
    """The line that says what went wrong in a rank's stderr log.

    The exception line of the last Python traceback ("ValueError: ..."); without a
    traceback, the last line that mentions an error; else the last non-empty line.
    """
    if not path or not os.path.isfile(path):
        return None
    with open(path, "rb") as f:
        f.seek(max(0, os.path.getsize(path) - limit))
        lines = f.read().decode(errors="replace").splitlines()
    # torch.distributed's excepthook prefixes a rank's traceback lines with "[rankN]: "
    lines = [_RANK_PREFIX.sub("", ln.rstrip()) for ln in lines]
    starts = [i for i, ln in enumerate(lines) if ln.strip() == _TRACEBACK]
    if starts:
        for ln in lines[starts[-1] + 1:]:
            if ln and not ln[0].isspace():
                return _clip(ln)
    for ln in reversed(lines):
        if _ERRORISH.search(ln):
            return _clip(ln.strip())
    for ln in reversed(lines):
        if ln.strip():
            return _clip(ln.strip())
    return None


def _clip(text: str, width: int = 240) -> str:
    return text if len(text) <= width else text[:width - 3] + "..."


def describe_exit(exitcode: int) -> str:
    """'exit code 3' or 'killed by SIGKILL'."""
    if exitcode < 0:
        try:
            return f"killed by {signal.Signals(-exitcode).name}"
        except ValueError:
            return f"killed by signal {-exitcode}"
    return f"exit code {exitcode}"


@dataclass
class RankFailure:
    """One failed rank as the summary shows it."""
    rank: int
    local_rank: int
    pid: int
    exitcode: int
    error: str | None = None


@dataclass
class Outcome:
    """What happened to the job, for the summary and the exit code."""
    status: str  # "ok", "failed", "interrupted", "error"
    seconds: float
    nproc: int
    failures: list[RankFailure] = field(default_factory=list)  # first observed failure first
    signal_name: str | None = None
    message: str | None = None
    log_dir: str | None = None
    logs_kept: bool = True
    attempts: int = 0
    max_restarts: int = 0
    killed_leftovers: int = 0
    removed_shm: list[str] = field(default_factory=list)
    # ranks of other nodes that failed (several nodes): (host label, failure), as they published them
    remote_failures: list[tuple[str, RankFailure]] = field(default_factory=list)
    node: str | None = None  # this node's host label, shown next to remote failures

    def exit_code(self) -> int:
        """0 on success; the first failed rank's exit code (128+signal if it was killed);
        128+signal when npurun was interrupted; 1 for launcher errors."""
        if self.status == "ok":
            return 0
        if self.status == "interrupted":
            return 128 + int(getattr(signal, self.signal_name or "SIGTERM"))
        first = self.failures[0] if self.failures else (self.remote_failures[0][1] if self.remote_failures else None)
        if self.status == "failed" and first is not None:
            code = first.exitcode
            if code > 0:
                return min(code, 255)
            if code < 0:
                return 128 - code
        return 1


def _stopped_by_us(f: RankFailure) -> bool:
    return f.exitcode in (-signal.SIGTERM, -signal.SIGKILL)


def _remote_lines(o: Outcome) -> list[str]:
    out = []
    for host, f in o.remote_failures:
        pid = f", pid {f.pid}" if f.pid else ""
        out.append(f"  rank {f.rank} on node {host} (local rank {f.local_rank}{pid}): {describe_exit(f.exitcode)}")
        if f.error:
            out.append(f"      first error: {f.error}")
    return out


def remote_failures(records: list[dict]) -> list[tuple[str, RankFailure]]:
    """(host, RankFailure) of the failure records other nodes published (jobwatch.Board)."""
    out = []
    for rec in records:
        for f in rec.get("failures", []):
            out.append((str(rec.get("host", "?")), RankFailure(int(f.get("rank", -1)), int(f.get("local_rank", -1)),
                                                             int(f.get("pid", 0)), int(f.get("exitcode", 1)),
                                                             f.get("error"))))
    return out


def summary(o: Outcome) -> str:
    """The closing summary: status, each failed rank (exit, first error line), restarts, logs."""
    out = []
    restarts = f"; restarts used {o.attempts - 1} of {o.max_restarts}" if o.attempts > 1 or o.max_restarts else ""
    if o.status == "ok":
        out.append(f"npurun: all {o.nproc} local ranks finished successfully in {o.seconds:.1f} s{restarts}")
    elif o.status == "failed" and not o.failures:
        host, first = o.remote_failures[0]
        out.append(f"npurun: job FAILED after {o.seconds:.1f} s: rank {first.rank} on node {host} failed "
                   f"({describe_exit(first.exitcode)}){restarts}")
        out.extend(_remote_lines(o))
        out.append(f"  this node's {o.nproc} local rank(s){' (' + o.node + ')' if o.node else ''} did not fail; "
                   f"npurun stopped waiting for the other nodes")
    elif o.status == "failed":
        first = o.failures[0]
        out.append(f"npurun: job FAILED after {o.seconds:.1f} s: rank {first.rank} failed first "
                   f"({describe_exit(first.exitcode)}){restarts}")
        for i, f in enumerate(o.failures):
            what = describe_exit(f.exitcode)
            if i > 0 and _stopped_by_us(f):
                what = f"stopped by npurun after rank {first.rank} failed ({what})"
            line = f"  rank {f.rank} (local rank {f.local_rank}, pid {f.pid}): {what}"
            if f.error and not (i > 0 and _stopped_by_us(f)):
                line += f"\n      first error: {f.error}"
            out.append(line)
        out.extend(_remote_lines(o))
    elif o.status == "interrupted":
        out.append(f"npurun: interrupted by {o.signal_name} after {o.seconds:.1f} s: ranks were sent SIGTERM "
                   f"(SIGKILL after the grace period){restarts}")
    else:
        out.append(f"npurun: job did not run: {o.message}")
    if o.killed_leftovers:
        out.append(f"  stopped {o.killed_leftovers} leftover process(es) of the job")
    if o.removed_shm:
        out.append(f"  removed {len(o.removed_shm)} leftover /dev/shm entr{'y' if len(o.removed_shm) == 1 else 'ies'}")
    if o.log_dir and o.logs_kept:
        out.append(f"  logs: {o.log_dir}/<local rank>/{{stdout,stderr}}.log")
    return "\n".join(out)
