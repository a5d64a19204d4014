"""PyTorch's device-generic tests on npu beside cpu: per test file, how many of the tests that pass on cpu pass on npu.

Two sources, both PyTorch's own:

* ``opinfo`` — the OpInfo database that ships with the wheel
  (``torch.testing._internal.common_methods_invocations.op_db``), run the way test_ops.py's
  ``TestCommon.test_compare_cpu`` runs it: every sample input of every OpInfo on npu and on cpu,
  compared with ``torch.testing.assert_close``'s default tolerances (and backward for floating
  dtypes), for float32, float64, int64, bool, bfloat16 and complex64 where the OpInfo supports
  the dtype on cpu (npudist.testing.opinfo.compare_op). A test id is ``op.variant.dtype``; it
  "passes on cpu" when at least one sample runs on cpu.
* PyTorch's ``test/test_*.py`` device-type files (test_view_ops.py, test_indexing.py, ...), read
  from a PyTorch checkout given with ``--tests DIR`` (never vendored here), copied to a scratch
  directory and run with pytest. ``instantiate_device_type_tests`` instantiates each test class
  for cpu (``CPUTestBase``) and for npu (``PrivateUse1TestBase``, present because npudist is
  loaded by torch's backend autoload before common_device_type builds its list). A test id is the
  test with its device suffix removed (``TestViewOps*::test_contiguous_{cpu,npu}``).
  torch_npu's repository keeps copies of these files (``test/``) that add ``import torch_npu``
  / ``import torch_npu.testing`` and ``only_for='privateuse1'``; given such a checkout the runner
  drops those two import lines in its scratch copy and sets
  ``PYTORCH_TESTING_DEVICE_FOR_CUSTOM=cpu`` so cpu is instantiated too. Files whose copy was
  edited beyond that (torch_npu's test_torch.py) are refused: they are not PyTorch's tests.

    python benchmarks/torch_device_conformance.py [--tests /path/to/pytorch/test]
        [--files view_ops,indexing,...] [--no-opinfo] [--opinfo-max-samples 4]
        [--timeout 1800] [--sample unary_ufuncs=0.1,...] [-k EXPR] [--json benchmarks/results/torch_device_conformance.json]

Prints one row per file: tests collected, passing on cpu, of those passing on npu, failing on
npu, skipped on npu, and the most common npu failure reasons; writes JSON with every id's
outcome on both devices. Each file runs in its own process (niced, bounded by --timeout;
a file cut short is marked partial). A conformance report, not CI.
"""
from __future__ import annotations

import argparse
import collections
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)

FILES = ["view_ops", "indexing", "tensor_creation_ops", "shape_ops", "type_promotion", "reductions",
         "binary_ufuncs", "unary_ufuncs", "torch"]
OPINFO_DTYPES = ["float32", "float64", "int64", "bool", "bfloat16", "complex64"]
# Lines torch_npu's copies add to PyTorch's files; anything else torch_npu-specific means "not PyTorch's test".
TORCH_NPU_IMPORTS = re.compile(r"^import torch_npu(\.testing)?\s*$")


# ----------------------------------------------------------------------------- test files

def prepare_file(src: str, dst_dir: str) -> tuple[str | None, str]:
    """Copies one test file to dst_dir; returns (path or None, note)."""
    with open(src) as f:
        lines = f.read().splitlines(keepends=True)
    kept = [ln for ln in lines if not TORCH_NPU_IMPORTS.match(ln)]
    dropped = len(lines) - len(kept)
    other = [ln for ln in kept if "torch_npu" in ln and not ln.lstrip().startswith("#")]
    if other:
        return None, f"refused: a torch_npu copy edited beyond its imports ({len(other)} lines use torch_npu)"
    dst = os.path.join(dst_dir, os.path.basename(src))
    with open(dst, "w") as f:
        f.writelines(kept)
    return dst, ("torch_npu's copy (2 import lines dropped, cpu instantiated through "
                 "PYTORCH_TESTING_DEVICE_FOR_CUSTOM)" if dropped else "PyTorch's file as is")


def device_key(classname: str, name: str) -> tuple[str | None, str]:
    """('cpu'|'npu'|None, id without the device): TestFooCPU::test_x_cpu_float32 -> TestFoo::test_x_float32."""
    cls = classname.rsplit(".", 1)[-1]
    for dev, suffixes in (("cpu", ("CPU",)), ("npu", ("PRIVATEUSE1", "NPU"))):
        for suf in suffixes:
            if cls.endswith(suf):
                i = name.rfind(f"_{dev}")
                if i >= 0 and (i + len(dev) + 1 == len(name) or name[i + len(dev) + 1] == "_"):
                    name = name[:i] + name[i + len(dev) + 1:]
                return dev, f"{cls[:-len(suf)]}::{name}"
    return None, f"{cls}::{name}"


def parse_junit(path: str) -> dict:
    """{device: {id: (outcome, reason)}} from a pytest JUnit XML."""
    out = {"cpu": {}, "npu": {}}
    if not os.path.exists(path):
        return out
    try:
        root = ET.parse(path).getroot()
    except ET.ParseError:
        return out
    for case in root.iter("testcase"):
        if not case.get("name"):
            continue
        dev, key = device_key(case.get("classname", ""), case.get("name"))
        if dev is None:
            continue
        outcome, reason = "passed", ""
        for child in case:
            if child.tag in ("failure", "error"):
                text = (child.text or "").strip().splitlines()
                outcome, reason = "failed", child.get("message") or (text[-1] if text else "")
                break
            if child.tag == "skipped":
                outcome, reason = "skipped", child.get("message", "")
        out[dev][key] = (outcome, (reason or "")[:300])
    return out


def sample_ids(path: str, fraction: float, k: str | None, env: dict, log) -> str | None:
    """Collects path's tests and keeps those whose device-free id hashes into `fraction` (the cpu and
    npu instance of a test are kept or dropped together); returns a pytest @argsfile, or None."""
    cmd = ["nice", sys.executable, "-m", "pytest", path, "--collect-only", "-q", "-p", "no:cacheprovider",
           "--confcutdir", os.path.dirname(path)] + (["-k", k] if k else [])
    out = subprocess.run(cmd, cwd=os.path.dirname(path), env=env, capture_output=True, text=True, timeout=900).stdout
    keep = []
    for line in out.splitlines():
        parts = line.strip().split("::")
        if len(parts) != 3:
            continue
        _, key = device_key(parts[1], parts[2])
        if zlib.crc32(key.encode()) % 10000 < fraction * 10000:
            keep.append(line.strip())
    log.write(f"sample {fraction}: {len(keep)} test ids kept\n")
    if not keep:
        return None
    argsfile = path + ".ids"
    with open(argsfile, "w") as f:
        f.write("\n".join(keep) + "\n")
    return argsfile


def run_file(path: str, timeout: int, per_test_timeout: int, k: str | None, log_path: str, env: dict,
             sample: float = 1.0) -> dict:
    xml = path + ".junit.xml"
    target = [path]
    if sample < 1.0:
        with open(log_path + ".collect", "w") as log:
            argsfile = sample_ids(path, sample, k, env, log)
        target, k = ([f"@{argsfile}"] if argsfile else [path]), None
    cmd = ["nice", sys.executable, "-m", "pytest", *target, "-q", "-rN", "-p", "no:cacheprovider", "-p", "no:randomly",
           "--confcutdir", os.path.dirname(path), f"--timeout={per_test_timeout}", f"--junitxml={xml}"]
    if k:
        cmd += ["-k", k]
    t0 = time.monotonic()
    partial = False
    with open(log_path, "w") as log:
        log.write(" ".join(cmd) + "\n")
        log.flush()
        proc = subprocess.Popen(cmd, cwd=os.path.dirname(path), env=env, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True)
        try:
            rc = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            partial = True
            os.killpg(proc.pid, 2)  # SIGINT: pytest still writes the XML for what ran
            try:
                rc = proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, 9)
                rc = proc.wait()
    return {"wall_s": round(time.monotonic() - t0, 1), "returncode": rc, "partial": partial, "junit": xml}


# ----------------------------------------------------------------------------- OpInfo

def opinfo_worker(out_path: str, max_samples: int, k: str | None):
    """Runs compare_op over op_db for OPINFO_DTYPES; writes {"cpu": {...}, "npu": {...}} (one process)."""
    import warnings
    warnings.filterwarnings("ignore")
    import torch
    from torch.testing._internal.common_methods_invocations import op_db

    import npudist  # noqa: F401  (registers npu, should autoload be off)
    from npudist.testing.op_coverage import explain
    from npudist.testing.opinfo import compare_op

    res = {"cpu": {}, "npu": {}}
    for op in op_db:
        supported = op.supported_dtypes("cpu")
        for dname in OPINFO_DTYPES:
            dtype = getattr(torch, dname)
            key = f"{op.name}.{op.variant_test_name}.{dname}".replace("..", ".")
            if k and not re.search(k, key):
                continue
            if dtype not in supported:
                continue
            try:
                r = compare_op(op, dtype, max_samples=max_samples)
            except Exception as err:  # noqa: BLE001  (the harness itself raised: counted as an npu error)
                res["cpu"][key] = ("passed", "")
                res["npu"][key] = ("failed", f"harness: {type(err).__name__}: {err}"[:300])
                continue
            if r.status == "skip":
                res["cpu"][key] = ("skipped", r.reason[:300])
                continue
            res["cpu"][key] = ("passed", "")
            why = explain(r) if r.status != "pass" else ""  # op_coverage's known causes (random, sparse, ...)
            res["npu"][key] = ("passed" if r.status == "pass" else "failed",
                               (f"[explained: {why}] " if why else "") + r.reason[:300])
        with open(out_path, "w") as f:  # after every op: a cut-short run keeps what it measured
            json.dump(res, f)


# ----------------------------------------------------------------------------- report

def reason_class(reason: str) -> str:
    """A coarse failure class: the exception line with numbers, shapes and quoted names blanked."""
    r = reason.strip().splitlines()[0] if reason.strip() else "?"
    r = re.sub(r"0x[0-9a-f]+", "X", r)
    r = re.sub(r"\d+(\.\d+)?(e[-+]?\d+)?", "N", r)
    r = re.sub(r"'[^']*'", "'…'", r)
    return r[:110]


def summarize(name: str, outcomes: dict) -> dict:
    cpu, npu = outcomes["cpu"], outcomes["npu"]
    cpu_pass = [k for k, (o, _) in cpu.items() if o == "passed"]
    npu_pass = [k for k in cpu_pass if npu.get(k, ("missing",))[0] == "passed"]
    npu_fail = {k: npu[k][1] for k in cpu_pass if npu.get(k, ("missing",))[0] == "failed"}
    npu_skip = [k for k in cpu_pass if npu.get(k, ("missing",))[0] == "skipped"]
    npu_missing = [k for k in cpu_pass if k not in npu]
    classes = collections.Counter(reason_class(r) for r in npu_fail.values())
    return {"file": name, "collected_cpu": len(cpu), "collected_npu": len(npu), "cpu_pass": len(cpu_pass),
            "npu_pass": len(npu_pass), "npu_fail": len(npu_fail), "npu_skip": len(npu_skip),
            "npu_missing": len(npu_missing), "failure_classes": classes.most_common(),
            "npu_failures": npu_fail, "npu_skipped": npu_skip, "npu_only_missing": npu_missing}


def print_table(rows: list[dict]):
    # "npu skip": skipped on npu by the suite itself (@onlyCPU, a dtype list without it, a device-count
    # need); the ratio is npu pass / (cpu pass - npu skip): of the tests both devices run.
    hdr = f"{'file':<26}{'cpu pass':>9}{'npu skip':>9}{'npu pass':>9}{'npu fail':>9}{'ratio':>8}  wall"
    print(hdr)
    print("-" * len(hdr))
    for r in rows:
        both = r["cpu_pass"] - r["npu_skip"]
        ratio = r["npu_pass"] / both if both else float("nan")
        note = " (partial)" if r.get("partial") else ""
        note += f" (sample {r['sample']:g})" if r.get("sample", 1.0) < 1.0 else ""
        print(f"{r['file']:<26}{r['cpu_pass']:>9}{r['npu_skip']:>9}{r['npu_pass']:>9}{r['npu_fail']:>9}"
              f"{ratio:>8.3f}  {r.get('wall_s', 0):.0f}s{note}")
    tot = {k: sum(r[k] for r in rows) for k in ("cpu_pass", "npu_skip", "npu_pass", "npu_fail")}
    print(f"{'total':<26}{tot['cpu_pass']:>9}{tot['npu_skip']:>9}{tot['npu_pass']:>9}{tot['npu_fail']:>9}")
    for r in rows:
        if r["failure_classes"]:
            print(f"\n{r['file']}: npu failure classes (count, first line)")
            for text, n in r["failure_classes"][:12]:
                print(f"  {n:>5}  {text}")
    for r in rows:
        if r.get("note", "").startswith(("nothing ran", "refused")):
            print(f"\n{r['file']}: {r['note']}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tests", help="a PyTorch checkout's test/ directory (or torch_npu's, see the docstring)")
    ap.add_argument("--files", default=",".join(FILES), help="comma-separated test_<name>.py names")
    ap.add_argument("--no-opinfo", action="store_true")
    ap.add_argument("--opinfo-only", action="store_true")
    ap.add_argument("--opinfo-max-samples", type=int, default=4)
    ap.add_argument("--timeout", type=int, default=1800, help="seconds per file (then partial)")
    ap.add_argument("--per-test-timeout", type=int, default=120)
    ap.add_argument("--sample", default="", help="name=fraction,... : run a deterministic fraction of a file's "
                    "tests (cpu and npu instances together), e.g. unary_ufuncs=0.1")
    ap.add_argument("-k", help="pytest -k expression (test files) / regex over op.variant.dtype (OpInfo)")
    ap.add_argument("--json", default=os.path.join(HERE, "results", "torch_device_conformance.json"))
    ap.add_argument("--_opinfo-worker", dest="opinfo_worker", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.opinfo_worker:
        opinfo_worker(args.opinfo_worker, args.opinfo_max_samples, args.k)
        return 0

    os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
    logdir = os.path.splitext(os.path.abspath(args.json))[0] + "-logs"
    os.makedirs(logdir, exist_ok=True)
    scratch = tempfile.mkdtemp(prefix="torch-device-conformance-")
    env = dict(os.environ, PYTHONUNBUFFERED="1", PYTORCH_TESTING_DEVICE_FOR_CUSTOM="cpu")
    env["PYTHONPATH"] = REPO + os.pathsep + env.get("PYTHONPATH", "")
    env.pop("TORCH_DEVICE_BACKEND_AUTOLOAD", None)  # npudist must load before common_device_type
    rows, raw = [], {}
    samples = {n: float(f) for n, f in (item.split("=") for item in args.sample.split(",") if item)}
    if not args.no_opinfo:
        out = os.path.join(scratch, "opinfo.json")
        cmd = ["nice", sys.executable, os.path.abspath(__file__), "--_opinfo-worker", out,
               "--opinfo-max-samples", str(args.opinfo_max_samples)] + (["-k", args.k] if args.k else [])
        t0 = time.monotonic()
        partial = False
        with open(os.path.join(logdir, "opinfo.log"), "w") as log:
            proc = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT)
            try:
                proc.wait(timeout=args.timeout * 2)
            except subprocess.TimeoutExpired:
                partial = True
                proc.kill()
                proc.wait()
        outcomes = json.load(open(out)) if os.path.exists(out) else {"cpu": {}, "npu": {}}
        row = summarize("OpInfo (test_compare_cpu)", outcomes)
        row.update(wall_s=round(time.monotonic() - t0, 1), partial=partial or proc.returncode != 0,
                   source="torch.testing._internal.common_methods_invocations.op_db",
                   dtypes=OPINFO_DTYPES, max_samples=args.opinfo_max_samples)
        rows.append(row)
        raw["opinfo"] = outcomes
    if not args.opinfo_only:
        if not args.tests:
            print("no --tests DIR given: only the OpInfo part ran (see the docstring for the test files)")
        else:
            for name in args.files.split(","):
                src = os.path.join(args.tests, f"test_{name}.py")
                if not os.path.exists(src):
                    print(f"test_{name}.py: not in {args.tests}; skipped")
                    continue
                path, note = prepare_file(src, scratch)
                if path is None:
                    print(f"test_{name}.py: {note}")
                    rows.append({**summarize(f"test_{name}.py", {"cpu": {}, "npu": {}}), "note": note})
                    continue
                print(f"test_{name}.py: running ({note})", flush=True)
                info = run_file(path, args.timeout, args.per_test_timeout, args.k,
                                os.path.join(logdir, f"test_{name}.log"), env, samples.get(name, 1.0))
                outcomes = parse_junit(info["junit"])
                row = summarize(f"test_{name}.py", outcomes)
                if not outcomes["cpu"] and not outcomes["npu"]:
                    # Nothing ran: say why (typically the file needs another torch version's test helpers).
                    with open(os.path.join(logdir, f"test_{name}.log")) as f:
                        errs = [ln.strip() for ln in f if ln.startswith("E ") or "Error" in ln[:40]]
                    note = "nothing ran: " + (errs[-1] if errs else f"pytest exit {info['returncode']}")
                    print(f"test_{name}.py: {note}")
                row.update(wall_s=info["wall_s"], partial=info["partial"], note=note, returncode=info["returncode"],
                           sample=samples.get(name, 1.0))
                rows.append(row)
                raw[name] = outcomes
    print_table(rows)
    with open(args.json, "w") as f:
        json.dump({"argv": sys.argv[1:], "load": os.getloadavg(), "rows": rows, "outcomes": raw}, f, indent=1)
    print(f"\nwrote {args.json}; logs in {logdir}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
