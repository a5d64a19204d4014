"""Tests of DTensor on npu; the scripts in workers/ run inside each rank and end with
``Checker.finish()`` (one summary RESULT line per rank)."""
import os

from npudist.testing import multiproc

WORKERS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "workers")


def run_worker(script, nranks, env=None, timeout=400):
    """Runs workers/<script> on `nranks` ranks; returns (Ranks, rank 0's RESULT dicts).
    Fails the test on a non-zero exit or a summary with failures (or without checks)."""
    r = multiproc.launch(os.path.join(WORKERS, script), nranks, env=env, timeout=timeout)
    summary = r.summary(0)
    detail = "\n".join(summary["failures"]) if summary else ""
    assert r.ok(), f"{script} on {nranks} ranks failed:\n{detail[-8000:]}\n{r.explain(1500)}"
    assert summary and not summary["failures"] and summary["checks"] > 0, detail or r.explain(1500)
    return r, r.results(0)
