"""Tests of DTensor on npu. The rank code is a function of each test module, beside its asserts
(npudist.testing.multiproc.run_on_ranks over a ``cpu:gloo,npu:hccl`` group); it ends with
``Checker.report()`` (one summary RESULT line per rank)."""
import functools

import npudist.dtensor  # noqa: F401  (registers the DTensor strategies of npu's fused ops; the ranks import this package too)
from npudist.testing import checks, multiproc

BACKEND = "cpu:gloo,npu:hccl"
"""The group every DTensor rank runs in: gloo for cpu tensors, hccl for npu ones."""

Checker = functools.partial(checks.Checker, rtol=1e-5, atol=1e-5)
"""One tolerance for DTensor results against single-process references."""


def run_ranks(fn, nranks, *args, env=None, timeout=400):
    """Runs ``fn(*args)`` on `nranks` ranks; returns (Ranks, rank 0's RESULT dicts).
    Fails the test on a non-zero exit or a summary with failures (or without checks)."""
    r = multiproc.run_on_ranks(fn, nranks, *args, backend=BACKEND, env=env, timeout=timeout)
    summary = r.summary(0)
    detail = "\n".join(summary["failures"]) if summary else ""
    name = getattr(fn, "__name__", fn)
    assert r.ok(), f"{name} on {nranks} ranks failed:\n{detail[-8000:]}\n{r.explain(1500)}"
    assert summary and not summary["failures"] and summary["checks"] > 0, detail or r.explain(1500)
    return r, r.results(0)
