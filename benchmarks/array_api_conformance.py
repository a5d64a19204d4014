"""Array API conformance report for npudist.xp (data-apis/array-api-tests).

The suite is not on PyPI: give a local checkout (with the array-api spec repository at the commit
it pins unpacked as its ``array-api/`` folder) and install its deps (hypothesis, ndindex,
pytest-json-report) into the environment. Run:

    .venv/bin/python benchmarks/array_api_conformance.py --suite /tmp/aat --max-examples 200

It runs pytest on the suite with ARRAY_API_TESTS_MODULE naming xp's namespace, prints
"passed N of M (P%)", the failures by test, the dtypes the namespace leaves out, and writes JSON to
benchmarks/results/array_api_conformance.json. Not part of CI (it takes tens of minutes).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
MODULE = "exec('import npudist.xp as _x; xp = _x.array_namespace()')"


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--suite", required=True, help="checkout of data-apis/array-api-tests (with array-api/ unpacked)")
    p.add_argument("--max-examples", type=int, default=200)
    p.add_argument("--out", default=os.path.join(HERE, "results", "array_api_conformance.json"))
    p.add_argument("pytest_args", nargs="*", help="extra pytest arguments (e.g. a test file)")
    args = p.parse_args()
    if not os.path.isdir(os.path.join(args.suite, "array-api", "spec")):
        sys.exit(f"{args.suite}/array-api is missing: unpack data-apis/array-api at the commit the suite pins there")
    report = os.path.join(tempfile.mkdtemp(), "report.json")
    env = dict(os.environ, ARRAY_API_TESTS_MODULE=MODULE)
    cmd = [sys.executable, "-m", "pytest", "array_api_tests", "-q", "-p", "no:cacheprovider",
           f"--max-examples={args.max_examples}", "--hypothesis-disable-deadline",
           "--json-report", f"--json-report-file={report}", "--timeout=600", *args.pytest_args]
    print("running:", " ".join(cmd), f"(in {args.suite})", flush=True)
    proc = subprocess.run(cmd, cwd=args.suite, env=env, capture_output=True, text=True)
    with open(report) as f:
        data = json.load(f)
    s = data["summary"]
    passed, failed = s.get("passed", 0), s.get("failed", 0) + s.get("error", 0)
    total = passed + failed
    failures = sorted(t["nodeid"] for t in data["tests"] if t["outcome"] in ("failed", "error"))
    for f_ in failures:
        print("FAILED", f_)
    from npudist.xp._array_api import API_VERSION, LEFT_OUT
    pct = 100.0 * passed / total if total else 0.0
    print(f"\nArray API {API_VERSION}: passed {passed} of {total} ({pct:.1f}%), skipped {s.get('skipped', 0)}, "
          f"max-examples {args.max_examples}")
    print("dtypes left out of the namespace:", ", ".join(LEFT_OUT))
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump({"passed": passed, "failed": failed, "skipped": s.get("skipped", 0), "percent": pct,
                   "max_examples": args.max_examples, "failures": failures, "left_out_dtypes": list(LEFT_OUT),
                   "command": " ".join(sys.argv)}, f, indent=1)
    if proc.returncode not in (0, 1):
        print(proc.stdout[-3000:], proc.stderr[-3000:])


if __name__ == "__main__":
    main()
