"""PyTorch's distributed test suite on hccl and on Gloo, side by side.

Runs ``torch/testing/_internal/distributed/distributed_test.py``
(``DistributedTest._DistTestBase`` with ``TestDistBackend``, one spawned
process per rank, FileStore rendezvous, cpu tensors) through
``tests/conformance/c10d_suite.py`` once per backend, on the same selection,
and compares the outcomes test by test. hccl is declared to the suite's
"plugin", "ddp" and "subgroup" feature sets by
``tests/conformance/hccl_features.py``; torch is never edited.

    python benchmarks/c10d_conformance.py [--world-size 2] [--backends gloo,hccl]
        [-k PYTEST_EXPR] [--parallel] [--json benchmarks/results/c10d_conformance.json]

Prints passed/failed/skipped per backend with wall times, the tests that pass
on the reference backend (the first one, gloo) but fail or skip on the
others, each with the reason the suite gave and, when the test is listed in
docs/collectives.md ("PyTorch's distributed test suite"), whether it is listed;
writes JSON with every test's outcome. Exit status 0 when every gloo-passing
test passes on hccl or is listed; 1 otherwise. The full suite takes ~10-15 min
per backend on an idle 2-core machine and well over an hour at load average 20 (each
test spawns WORLD_SIZE processes importing torch); the inner pytest logs go
beside the JSON, c10d_conformance-<backend>-ws<N>.log. Interrupting the inner pytest
(SIGINT) still reports the tests run so far, marked partial.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
SUITE = os.path.join(REPO, "tests", "conformance", "c10d_suite.py")
DOC = os.path.join(REPO, "docs", "collectives.md")
DOC_SECTION = "## PyTorch's distributed test suite"

# Tests whose names say which subset they belong to (the collectives subset, run at odd world sizes).
COLLECTIVES_K = " or ".join(("test_all_reduce", "test_all_gather", "test_reduce", "test_broadcast", "test_scatter",
                             "test_gather", "test_all_to_all", "test_barrier", "test_send_recv", "test_isend",
                             "test_irecv", "test_batch_isend_irecv"))


def run_backend(backend: str, world_size: int, k: str | None, timeout: int, log_path: str) -> dict:
    """Runs the suite for one backend; returns {"wall_s", "returncode", "tests": {name: {...}}}."""
    tmp = tempfile.mkdtemp(prefix=f"c10d-{backend}-")
    xml_path = os.path.join(tmp, "junit.xml")
    env = dict(os.environ, BACKEND=backend, WORLD_SIZE=str(world_size), TEMP_DIR=tmp, PYTHONUNBUFFERED="1")
    env["PYTHONPATH"] = REPO + os.pathsep + env.get("PYTHONPATH", "")
    cmd = [sys.executable, "-m", "pytest", SUITE, "-q", "-rN", "-p", "no:cacheprovider",
           "--confcutdir", os.path.dirname(SUITE), f"--timeout={timeout}", f"--junitxml={xml_path}"]
    if k:
        cmd += ["-k", k]
    t0 = time.monotonic()
    with open(log_path, "w") as log:
        log.write(" ".join(cmd) + "\n")
        log.flush()
        proc = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT)
    return {"proc": proc, "t0": t0, "xml": xml_path, "cmd": cmd}


def collect(handle: dict) -> dict:
    """Waits for a run_backend() process and parses its JUnit XML."""
    rc = handle["proc"].wait()
    wall = time.monotonic() - handle["t0"]
    tests = {}
    if os.path.exists(handle["xml"]):
        for case in ET.parse(handle["xml"]).getroot().iter("testcase"):
            name = case.get("name")
            if not name:  # the test running when pytest was interrupted: an empty <testcase/>
                continue
            outcome, reason = "passed", ""
            for child in case:
                if child.tag == "skipped":
                    outcome, reason = "skipped", child.get("message", "")
                elif child.tag in ("failure", "error"):
                    outcome, reason = "failed", child.get("message", "")
            tests[name] = {"outcome": outcome, "reason": _short(reason), "time_s": float(case.get("time") or 0)}
    # pytest exits 2 when interrupted (Ctrl-C / SIGINT): the XML then holds the tests run so far.
    return {"wall_s": round(wall, 1), "returncode": rc, "interrupted": rc == 2, "tests": tests}


def _short(reason: str) -> str:
    reason = reason.strip().splitlines()[0] if reason.strip() else ""
    return reason[:300]


def documented(doc_path: str = DOC) -> dict[str, str]:
    """Tests listed in docs/collectives.md's suite section: {test name: row text}."""
    with open(doc_path) as f:
        text = f.read()
    start = text.find(DOC_SECTION)
    if start < 0:
        return {}
    end = text.find("\n## ", start + len(DOC_SECTION))
    section = text[start:end if end > 0 else None]
    listed = {}
    for line in section.splitlines():
        if line.startswith("|"):
            for name in re.findall(r"`(test_\w+)`", line):
                listed[name] = line
    return listed


def compare(results: dict, reference: str, doc_path: str = DOC) -> dict:
    """Per non-reference backend: the reference's passing tests that do not pass there
    (a test the other backend did not run counts as "missing"), each marked documented
    when ``doc_path``'s suite section lists it."""
    ref = results[reference]["tests"]
    listed = documented(doc_path)
    out = {}
    for backend, res in results.items():
        if backend == reference:
            continue
        gaps = []
        for name, r in sorted(ref.items()):
            if r["outcome"] != "passed":
                continue
            other = res["tests"].get(name, {"outcome": "missing", "reason": ""})
            if other["outcome"] != "passed":
                gaps.append({"test": name, "outcome": other["outcome"], "reason": other["reason"],
                             "documented": name in listed})
        extra = sorted(n for n, r in res["tests"].items()
                       if r["outcome"] == "passed" and ref.get(n, {}).get("outcome") != "passed")
        out[backend] = {"gaps": gaps, "undocumented": [g["test"] for g in gaps if not g["documented"]],
                        "passes_only_here": extra}
    return out


def counts(tests: dict) -> dict:
    c = {"passed": 0, "failed": 0, "skipped": 0}
    for r in tests.values():
        c[r["outcome"]] += 1
    return c


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--world-size", type=int, default=2)
    p.add_argument("--backends", default="gloo,hccl", help="comma-separated; the first is the reference")
    p.add_argument("-k", default=None, help="pytest -k expression selecting tests (same for every backend)")
    p.add_argument("--collectives", action="store_true", help="select the collectives subset (" + COLLECTIVES_K[:40] + " ...)")
    p.add_argument("--parallel", action="store_true", help="run the backends at the same time (halves wall time, "
                                                           "but timing-sensitive tests see twice the load)")
    p.add_argument("--timeout", type=int, default=900, help="pytest-timeout per test, seconds")
    p.add_argument("--json", default=None, help="default: benchmarks/results/c10d_conformance[-ws<N>].json")
    p.add_argument("--doc", default=DOC, help="the page whose \"" + DOC_SECTION[3:] + "\" section lists the "
                                               "accepted gaps (default: docs/collectives.md)")
    args = p.parse_args(argv)
    backends = [b.strip() for b in args.backends.split(",") if b.strip()]
    k = args.k
    if args.collectives:
        k = f"({COLLECTIVES_K})" + (f" and ({k})" if k else "")
    suffix = "" if args.world_size == 2 else f"-ws{args.world_size}"
    out_json = args.json or os.path.join(HERE, "results", f"c10d_conformance{suffix}.json")
    os.makedirs(os.path.dirname(out_json), exist_ok=True)

    t_all = time.monotonic()
    results = {}
    handles = {}
    for b in backends:
        log = os.path.join(os.path.dirname(out_json), f"c10d_conformance-{b}-ws{args.world_size}.log")
        print(f"[{b}] running the suite at WORLD_SIZE={args.world_size} (log: {log})", flush=True)
        handles[b] = run_backend(b, args.world_size, k, args.timeout, log)
        if not args.parallel:
            results[b] = collect(handles[b])
            print(f"[{b}] {counts(results[b]['tests'])} in {results[b]['wall_s']} s", flush=True)
    if args.parallel:
        for b in backends:
            results[b] = collect(handles[b])
    total_wall = time.monotonic() - t_all

    print(f"\nPyTorch distributed_test.py, WORLD_SIZE={args.world_size}, cpu tensors"
          + (f", -k {k!r}" if k else "") + (" (backends in parallel)" if args.parallel else ""))
    print(f"{'backend':<8} {'passed':>7} {'failed':>7} {'skipped':>8} {'wall (s)':>9}")
    for b in backends:
        c = counts(results[b]["tests"])
        print(f"{b:<8} {c['passed']:>7} {c['failed']:>7} {c['skipped']:>8} {results[b]['wall_s']:>9.1f}"
              + ("  (interrupted: partial)" if results[b]["interrupted"] else ""))
    reference = backends[0]
    diff = compare(results, reference, args.doc)
    ok = True
    for b, d in diff.items():
        print(f"\nPass on {reference}, not on {b}: {len(d['gaps'])} "
              f"({len(d['gaps']) - len(d['undocumented'])} listed in {os.path.relpath(args.doc, REPO)})")
        for g in d["gaps"]:
            mark = "listed " if g["documented"] else "NOT LISTED"
            print(f"  {g['outcome']:<8} {mark:<10} {g['test']}: {g['reason'][:150]}")
        if d["passes_only_here"]:
            print(f"Pass on {b}, not on {reference}: {', '.join(d['passes_only_here'])}")
        ok = ok and not d["undocumented"]
    for b in backends:
        failed = sorted(n for n, r in results[b]["tests"].items() if r["outcome"] == "failed")
        if failed:
            print(f"\nFailed on {b}: {', '.join(failed)}")
    print(f"\nTotal wall time {total_wall:.0f} s (shared, loaded machine)")
    with open(out_json, "w") as f:
        json.dump({"world_size": args.world_size, "k": k, "parallel": args.parallel, "backends": backends,
                   "reference": reference, "wall_s": round(total_wall, 1),
                   "counts": {b: counts(results[b]["tests"]) for b in backends},
                   "wall_s_per_backend": {b: results[b]["wall_s"] for b in backends},
                   "interrupted": {b: results[b]["interrupted"] for b in backends},
                   "compare": diff, "results": {b: results[b]["tests"] for b in backends},
                   "command": " ".join([os.path.relpath(sys.argv[0], REPO) if sys.argv and sys.argv[0] else ""]
                                       + (argv if argv is not None else sys.argv[1:]))}, f, indent=1)
    print(f"JSON: {out_json}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
