"""The in-rank side of the multi-rank harness (:mod:`npudist.testing.multiproc`): report results
and collect checks without stopping at the first failure.

A worker script imports this, runs its checks, and prints one ``RESULT {json}`` line per result;
the test reads them with ``Ranks.results(rank)`` / ``Ranks.summary(rank)``::

    from npudist.testing.checks import Checker, report

    report(kind="topology", hosts=[...])      # any JSON-able result
    chk = Checker()
    chk.close(got, want, "all_reduce float32")  # dtype, shape and values (per-dtype tolerance)
    chk.true(x.is_contiguous(), "contiguous")
    value = chk.run("save", save_fn, path)       # an exception becomes a failure, not a crash
    chk.report(steps=3)                          # RESULT {"kind": "summary", "rank": 0, "checks": ...}

Importing this module does not import torch (the checks that compare tensors import it lazily).
"""
from __future__ import annotations

import json
import os
import traceback

from npudist.testing.multiproc import RESULT_PREFIX

MAX_REPORTED_FAILURES = 100
"""A summary lists at most this many failure messages (``nfail`` has the full count)."""


def report(**kw) -> None:
    """Prints one ``RESULT {json}`` line (flushed); values that JSON cannot hold are str()-ed."""
    print(RESULT_PREFIX + json.dumps(kw, default=str), flush=True)


def default_tolerance(dtype) -> tuple[float, float]:
    """(rtol, atol) for comparing results of ``dtype`` computed in a different order (collectives
    sum partial results in a different order than a single-process reference): float16 2e-3,
    bfloat16 1.6e-2, float32 1e-5, float64 1e-12 (complex: those of its real part); 0 (exact)
    for integer and bool dtypes."""
    import torch

    if dtype.is_complex:
        dtype = torch.finfo(dtype).dtype
    return {torch.float16: (2e-3, 2e-3), torch.bfloat16: (1.6e-2, 1.6e-2), torch.float32: (1e-5, 1e-5),
            torch.float64: (1e-12, 1e-12)}.get(dtype, (0.0, 0.0))


class Checker:
    """Counts checks and collects failure messages instead of stopping at the first.

    rtol/atol: tolerances used by :meth:`close` for every floating dtype when given; otherwise
    :func:`default_tolerance` of the dtype, multiplied by ``tol_scale``.
    rank: reported in the summary (default: the RANK environment variable, else 0).
    ``info`` is a dict the worker may fill; it goes into the summary.
    """

    def __init__(self, rtol: float | None = None, atol: float | None = None, tol_scale: float = 1.0,
                 rank: int | None = None):
        self.rtol, self.atol, self.tol_scale = rtol, atol, tol_scale
        self.rank = int(os.environ.get("RANK", "0")) if rank is None else rank
        self.checks = 0
        self.failures: list[str] = []
        self.info: dict = {}

    def fail(self, what: str) -> None:
        """Records a failure (counted as one check)."""
        self.checks += 1
        self.failures.append(what)

    def true(self, cond, what: str, detail: str = "") -> bool:
        """One check that ``cond`` is truthy; ``detail`` is added to the failure message."""
        self.checks += 1
        if not cond:
            self.failures.append(f"{what}: {detail}" if detail else what)
        return bool(cond)

    def close(self, got, want, what: str, rtol: float | None = None, atol: float | None = None,
              exact_dtype: bool = True, equal_nan: bool = True) -> bool:
        """One check that tensors (or numbers) ``got`` and ``want`` agree: same shape, same dtype
        (unless ``exact_dtype=False``, then both are compared as float64/complex128), values
        within ``|got - want| <= atol + rtol * |want|`` for floating/complex dtypes, exactly
        equal otherwise; NaN matches NaN when ``equal_nan``. Both are moved to the cpu first."""
        import torch

        self.checks += 1
        got = torch.as_tensor(got).detach().cpu()
        want = torch.as_tensor(want).detach().cpu()
        try:
            if got.shape != want.shape or (exact_dtype and got.dtype != want.dtype):
                raise AssertionError(f"dtype/shape {got.dtype}{tuple(got.shape)} != {want.dtype}{tuple(want.shape)}")
            floating = got.dtype.is_floating_point or got.dtype.is_complex or not exact_dtype
            if floating:
                if rtol is None and atol is None:
                    rtol, atol = self.rtol, self.atol
                if rtol is None and atol is None:
                    base = max((default_tolerance(t.dtype) for t in (got, want)), default=(0.0, 0.0))
                    rtol, atol = (self.tol_scale * v for v in base)
                rtol, atol = rtol or 0.0, atol or 0.0
                wide = torch.complex128 if (got.dtype.is_complex or want.dtype.is_complex) else torch.float64
                g, w = got.to(wide), want.to(wide)
                bad = (g - w).abs() > atol + rtol * w.abs()
                if equal_nan:
                    bad &= ~(g.isnan() & w.isnan())
                else:
                    bad |= g.isnan() | w.isnan()
                if bad.any():
                    i = tuple(bad.nonzero()[0].tolist())
                    worst = float((g - w).abs().nan_to_num(float("inf")).max())
                    raise AssertionError(f"{int(bad.sum())} of {bad.numel()} elements differ, e.g. {list(i)}: "
                                         f"{g[i].item()} vs {w[i].item()} (max abs diff {worst:.3g}, "
                                         f"rtol {rtol:g}, atol {atol:g})")
            elif not torch.equal(got, want):
                bad = (got != want).nonzero()[:3].tolist()
                raise AssertionError(f"differs at {bad}")
        except AssertionError as e:
            self.failures.append(f"{what}: {' '.join(str(e).split())[:400]}")
            return False
        return True

    def run(self, what: str, fn, *args, **kw):
        """Calls ``fn(*args, **kw)`` as one check and returns its value; an exception is recorded
        as a failure with the last lines of its traceback and None is returned."""
        self.checks += 1
        try:
            return fn(*args, **kw)
        except Exception:  # noqa: BLE001  - reported as a failure, the test fails on it
            self.failures.append(f"{what}: raised {traceback.format_exc()[-2000:]}")
            return None

    def summary(self, **extra) -> dict:
        """The summary dict :meth:`report` prints."""
        return dict(kind="summary", rank=self.rank, checks=self.checks,
                    failures=self.failures[:MAX_REPORTED_FAILURES], nfail=len(self.failures), info=self.info,
                    **extra)

    def report(self, **extra) -> None:
        """Prints the summary as one ``RESULT`` line (``extra`` keys are added to it)."""
        report(**self.summary(**extra))

    def finish(self, **extra) -> None:
        """:meth:`report`, then (when a default process group exists) a barrier and
        ``destroy_process_group``, then exits the process: status 1 if any check failed, else 0."""
        self.report(**extra)
        import torch.distributed as dist

        if dist.is_available() and dist.is_initialized():
            dist.barrier()
            dist.destroy_process_group()
        raise SystemExit(1 if self.failures else 0)
