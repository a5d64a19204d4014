"""The job-wide profiler behind ``npurun --profile`` and :func:`step`.

``npurun --profile DIR --profile-steps A:B`` sets ``NPUDIST_PROFILE_DIR`` and
``NPUDIST_PROFILE_STEPS`` in every rank. The script calls :func:`step` once at the end of
each training step (where it would call ``prof.step()`` on a ``torch.profiler.profile``).
Steps are numbered from 0: step k is the work between the k-th and (k+1)-th call (the
first call starts the profiler, so step 0, before it, is never recorded). Steps A..B-1 (a
Python range) are recorded with activities CPU and PrivateUse1 (npu) and the npu allocator's
events; when step B ends, the rank writes ``DIR/rank<RANK>.json`` (torch's
``export_chrome_trace``) and its step trace ``DIR/steptrace/rank<RANK>.steptrace.json`` (npudist.plan's
format, docs/plan.md; ``NPUDIST_PROFILE_STEP_TRACE=0``: none, and no step-trace fields in the
trace) and stops profiling. With step traces on, the npu's peak-memory statistics restart at
step A (``torch.npu.reset_peak_memory_stats()``), so the trace carries the allocator's own peak
over the recorded steps. A job that ends before step B writes what was recorded at exit.

Without ``NPUDIST_PROFILE_DIR`` :func:`step` does nothing (one dictionary lookup).
"""
from __future__ import annotations

import atexit
import os

from npudist import _env

PROFILE_DIR_ENV = "NPUDIST_PROFILE_DIR"
PROFILE_STEPS_ENV = "NPUDIST_PROFILE_STEPS"
PROFILE_STEP_TRACE_ENV = "NPUDIST_PROFILE_STEP_TRACE"
DEFAULT_STEPS = "1:4"

_state = None  # _JobProfiler once started, False when profiling is off
# npudist.plan's capture (npudist/plan/script.py) marks its step boundaries here: called with ``tokens`` instead
# of profiling while it is set
_capture_hook = None


def parse_steps(text: str) -> tuple[int, int]:
    """'A:B' -> (A, B): record steps A..B-1. Raises ValueError naming the problem.

    A >= 1 (step 0 runs before the first :func:`step` call, when no profiler runs yet)
    and B > A.
    """
    parts = str(text).split(":")
    try:
        if len(parts) != 2:
            raise ValueError
        a, b = int(parts[0]), int(parts[1])
    except ValueError:
        raise ValueError(f"profile steps {text!r}: use A:B (record steps A..B-1, e.g. 2:5)") from None
    if a < 1:
        raise ValueError(f"profile steps {text!r}: A must be >= 1 (step 0 runs before the first "
                         f"npudist.profiler.step() call, before the profiler starts)")
    if b <= a:
        raise ValueError(f"profile steps {text!r}: B must be greater than A (steps A..B-1 are recorded)")
    return a, b


class _JobProfiler:
    def __init__(self, out_dir: str, first: int, end: int):
        import torch
        from torch.profiler import ProfilerActivity, profile, schedule

        self.rank = int(_env.get_str("RANK", "0") or 0)
        self.path = os.path.join(out_dir, f"rank{self.rank}.json")
        # in a subfolder: tools that read every *.json of DIR as a torch.profiler trace (HTA, merge) keep working
        self.step_trace_path = os.path.join(out_dir, "steptrace", f"rank{self.rank}.steptrace.json")
        self.first = first
        self.step_trace = _env.get_bool(PROFILE_STEP_TRACE_ENV, True)
        self.tokens: int | None = None
        self.written = False
        # The first step() call starts the profiler: our step k is torch's step k-1, so steps
        # first..end-1 are torch's first-1..end-2 (one warm-up step before them when there is one).
        warmup = 1 if first >= 2 else 0
        self.prof = profile(
            activities=[ProfilerActivity.CPU, ProfilerActivity.PrivateUse1],
            schedule=schedule(wait=first - 1 - warmup, warmup=warmup, active=end - first, repeat=1),
            profile_memory=self.step_trace, on_trace_ready=self._write)
        del torch
        if self.step_trace:
            from npudist import _C
            _C._profiler_set_step_trace(True)
        self.calls = 1  # step() calls so far; step k starts at the k-th
        self.prof.start()
        self._maybe_reset_peak()
        atexit.register(self.close)

    def _write(self, prof) -> None:
        prof.export_chrome_trace(self.path)
        self.written = True
        if self.step_trace:
            from npudist import _C
            from npudist.profiler.step_trace import write_step_trace
            _C._profiler_set_step_trace(False)
            import torch
            peak = torch.npu.max_memory_allocated() if torch.npu.is_initialized() else None
            os.makedirs(os.path.dirname(self.step_trace_path), exist_ok=True)
            write_step_trace(self.path, self.step_trace_path, rank=self.rank,
                             world_size=int(_env.get_str("WORLD_SIZE", "1") or 1), tokens_per_step=self.tokens,
                             first_step=self.first, allocator_peak=peak)

    def _maybe_reset_peak(self) -> None:
        # The allocator's own peak over the recorded steps goes into the step trace
        # (memory.allocator_peak_allocated), so the peak statistics restart when they begin.
        if self.step_trace and self.calls == self.first:
            import torch
            if torch.npu.is_initialized():
                torch.npu.reset_peak_memory_stats()

    def step(self, tokens: int | None) -> None:
        if tokens is not None:
            self.tokens = int(tokens)
        self.calls += 1
        self.prof.step()
        self._maybe_reset_peak()

    def close(self) -> None:
        if self.prof is not None:
            prof, self.prof = self.prof, None
            prof.stop()  # writes the trace if recording was underway (on_trace_ready)


def is_profiling() -> bool:
    """True in a rank started by ``npurun --profile`` (``NPUDIST_PROFILE_DIR`` set)."""
    return bool(_env.get_str(PROFILE_DIR_ENV))


def step(tokens: int | None = None) -> None:
    """Marks the end of one training step for ``npurun --profile`` (see the module doc).

    ``tokens``: tokens this rank processed in the step; kept in the step trace so that
    ``python -m npudist.plan predict`` reports tokens/s per device. Does nothing unless
    ``NPUDIST_PROFILE_DIR`` is set. Raises ValueError for a malformed
    ``NPUDIST_PROFILE_STEPS`` and OSError when the directory cannot be created.
    """
    global _state
    if _capture_hook is not None:
        _capture_hook(tokens)
        return
    if _state is None:
        out_dir = _env.get_str(PROFILE_DIR_ENV)
        if not out_dir:
            _state = False
            return
        first, end = parse_steps(_env.get_str(PROFILE_STEPS_ENV) or DEFAULT_STEPS)
        os.makedirs(out_dir, exist_ok=True)
        _state = _JobProfiler(out_dir, first, end)
        _state.tokens = None if tokens is None else int(tokens)
        return
    if _state:
        _state.step(tokens)
