"""PyTorch's own distributed test suite on hccl vs Gloo.

Full tier: runs benchmarks/c10d_conformance.py (the whole of distributed_test.py's
DistributedTest._DistTestBase at WORLD_SIZE=2, then its collectives subset at
WORLD_SIZE=3, each once per backend on the same selection) and requires that every
test passing on gloo passes on hccl or is listed, with its reason, in
docs/collectives.md ("PyTorch's distributed test suite"). Takes 1-2 h each on a
loaded 2-core machine. A one-test run of the runner against a copy of the page
without that test's row checks that an unlisted gap fails it (~1 min).

Default tier (no processes): ``check`` — the assertions the full-tier tests make
on the runner's JSON — rejects an unlisted gap, a failure on gloo, and runs that
did not cover the same tests, on results built here and compared by the runner's
own ``compare``.
"""
import importlib.util
import json
import os
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(REPO, "benchmarks", "c10d_conformance.py")
DOC = os.path.join(REPO, "docs", "collectives.md")
# Gated by name in distributed_test.py ("get_future is only supported on mpi, nccl and gloo"):
# passes on gloo, skips on hccl, whatever hccl supports; listed in docs/collectives.md.
GATED = "test_get_future"


def _runner():
    spec = importlib.util.spec_from_file_location("c10d_conformance", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def check(data: dict) -> None:
    """Asserts on the runner's JSON: gloo ran tests and failed none, neither run was cut
    short, both backends ran the same tests, and every gloo pass that is not an hccl pass
    is listed in docs/collectives.md."""
    gloo, hccl = data["results"]["gloo"], data["results"]["hccl"]
    assert data["counts"]["gloo"]["passed"] > 0, data["counts"]
    assert not any(data["interrupted"].values()), f"a run was interrupted: {data['interrupted']}"
    assert set(gloo) == set(hccl), ("the backends ran different tests (a run crashed?): only on gloo "
                                    f"{sorted(set(gloo) - set(hccl))[:20]}, only on hccl {sorted(set(hccl) - set(gloo))[:20]}")
    failed = sorted(n for n, r in gloo.items() if r["outcome"] == "failed")
    assert not failed, f"failed on gloo: {failed}"
    undocumented = data["compare"]["hccl"]["undocumented"]
    assert not undocumented, f"pass on gloo, not on hccl, not listed in docs/collectives.md: {undocumented}"


def _run(tmp_path, *args):
    out = tmp_path / "result.json"
    proc = subprocess.run([sys.executable, SCRIPT, "--json", str(out), *args], cwd=REPO, capture_output=True,
                          text=True)
    assert out.exists(), proc.stdout[-4000:] + proc.stderr[-4000:]
    return proc, json.loads(out.read_text())


def _fake(outcomes: dict) -> dict:
    """The runner's JSON for {test: (gloo outcome, hccl outcome)}, compared by the runner itself."""
    mod = _runner()
    results = {b: {"tests": {n: {"outcome": o[i], "reason": "", "time_s": 0.0} for n, o in outcomes.items()
                             if o[i] is not None}} for i, b in enumerate(("gloo", "hccl"))}
    return {"results": {b: r["tests"] for b, r in results.items()},
            "counts": {b: mod.counts(r["tests"]) for b, r in results.items()},
            "interrupted": {"gloo": False, "hccl": False},
            "compare": mod.compare(results, "gloo", DOC)}


def test_check_accepts_listed_gaps_only():
    # a listed gap (name-gated skip) and hccl-only passes are fine
    check(_fake({"test_all_reduce_sum": ("passed", "passed"), GATED: ("passed", "skipped"),
                 "test_ddp_logging_data_cpu": ("passed", "failed"), "test_x_cuda": ("skipped", "passed")}))
    with pytest.raises(AssertionError, match="not listed.*test_not_in_the_table"):
        check(_fake({"test_all_reduce_sum": ("passed", "passed"), "test_not_in_the_table": ("passed", "skipped")}))
    with pytest.raises(AssertionError, match="not listed.*test_not_in_the_table"):
        check(_fake({"test_all_reduce_sum": ("passed", "passed"), "test_not_in_the_table": ("passed", "failed")}))
    with pytest.raises(AssertionError, match="failed on gloo"):
        check(_fake({"test_all_reduce_sum": ("passed", "passed"), "test_broadcast": ("failed", "passed")}))
    with pytest.raises(AssertionError, match="different tests"):  # hccl's run stopped early
        check(_fake({"test_all_reduce_sum": ("passed", "passed"), "test_later": ("passed", None)}))


def test_doc_section_lists_the_known_gaps():
    listed = _runner().documented(DOC)
    for name in (GATED, "test_sparse_all_reduce_sum", "test_ddp_logging_data_cpu", "test_monitored_barrier_gloo"):
        assert name in listed, name
    # only the suite section counts: the fixed tests named in its prose are not table rows
    assert "test_all_gather_coalesced_simple" not in listed


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_runner_fails_on_an_unlisted_gap(tmp_path):
    """One real gloo-only pass, once with the page as it is and once with its row removed."""
    doc = tmp_path / "collectives.md"
    with open(DOC) as f:
        lines = f.read().splitlines(keepends=True)
    doc.write_text("".join(line for line in lines if not (line.startswith("|") and f"`{GATED}`" in line)))
    proc, data = _run(tmp_path, "-k", GATED, "--doc", str(doc))
    assert data["results"]["gloo"][GATED]["outcome"] == "passed", data["results"]
    assert data["results"]["hccl"][GATED]["outcome"] == "skipped", data["results"]
    assert proc.returncode == 1 and "NOT LISTED" in proc.stdout, proc.stdout[-3000:]
    with pytest.raises(AssertionError, match=GATED):
        check(data)
    proc, data = _run(tmp_path, "-k", GATED)
    assert proc.returncode == 0, proc.stdout[-3000:]
    check(data)


@pytest.mark.slow
@pytest.mark.timeout(3 * 3600)
def test_suite_world_size_2(tmp_path):
    check(_run(tmp_path, "--world-size", "2")[1])


@pytest.mark.slow
@pytest.mark.timeout(3 * 3600)
def test_collectives_world_size_3(tmp_path):
    check(_run(tmp_path, "--world-size", "3", "--collectives")[1])
