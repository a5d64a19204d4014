"""CuPy's own NumPy-comparison tests (cupy/cupy v14.2.0, tests/cupy_tests) run against npudist.xp.

The suite is not vendored. Get it from a CuPy checkout (or a GitHub archive of the tag):

    git clone --depth 1 --branch v14.2.0 https://github.com/cupy/cupy /tmp/cupy
    .venv/bin/pip install cupy-cuda12x==14.2.0          # imports without a GPU (cupy.testing)
    .venv/bin/python benchmarks/cupy_conformance.py --suite /tmp/cupy/tests/cupy_tests
    .venv/bin/python benchmarks/cupy_conformance.py --suite /tmp/cupy/tests/cupy_tests --folders extra \
        --out benchmarks/results/cupy_conformance_extra.json   # lib, functional, io, testing + root files

For every folder (creation_tests, manipulation_tests, ...) pytest runs twice in the same run, with
the plugin benchmarks/xp_cupy_plugin.py aliasing ``cupy`` onto NumPy (the baseline) and then
onto npudist.xp. It prints per folder the test ids passing with each target and the share of the
NumPy-passing ids that pass with xp (the issue's bar: >= 97 % per folder; math_tests is reported
separately; ``--folders core`` runs core_tests' NumPy-comparison files, reported per file and
apart from the 13), and writes benchmarks/results/cupy_conformance.json with the ids failing with xp
only. Not part of CI: the whole suite takes tens of minutes.
"""
import argparse
import collections
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
FOLDERS = ("creation", "manipulation", "indexing", "logic", "sorting", "statistics", "binary", "padding",
           "polynomial", "linalg", "fft", "random", "misc")
# Outside the 13: the folders and root files of tests/cupy_tests that test NumPy-level API
# (core_tests is run on its own; cuda_tests, test_cublas.py and test_typing.py need CUDA / mypy).
EXTRA = ("lib", "functional", "io", "testing", "test_type_routines.py", "test_ndim.py",
         "test_numpy_interop.py", "test_init.py")
TARGET_RATIO = 0.97
# core_tests (the ndarray tests) is run file by file: its NumPy-comparison files, plus CuPy's
# user-kernel tests where xp documents that API (docs/xp.md, "User kernels"). NumPy has no
# kernels, so those files' NumPy baseline is ~0; the table gives their xp passes out of all IDs.
CORE_FILES = ("test_ndarray.py", "test_ndarray_adv_indexing.py", "test_ndarray_byteswap.py",
              "test_ndarray_complex_ops.py", "test_ndarray_contiguity.py", "test_ndarray_conversion.py",
              "test_ndarray_copy_and_view.py", "test_ndarray_elementwise_op.py", "test_ndarray_get.py",
              "test_ndarray_indexing.py", "test_ndarray_math.py", "test_ndarray_owndata.py",
              "test_ndarray_reduction.py", "test_ndarray_scatter.py", "test_ndarray_ufunc.py",
              "test_ndarray_unary_op.py", "test_ufunc_methods.py", "test_nep50_examples.py", "test_flags.py",
              "test_function.py", "test_gufuncs.py", "test_iter.py", "test_array_function.py", "test_dlpack.py",
              "test_bfloat16.py")
CORE_KERNEL_FILES = ("test_elementwise.py", "test_reduction.py", "test_userkernel.py")
CORE_NOT_APPLICABLE = {
    "test_ndarray_cuda_array_interface.py": "__cuda_array_interface__ and CUDA streams",
    "test_raw.py": "RawKernel/RawModule: CUDA C++ source compiled by NVRTC",
    "test_cub_reduction.py": "CUB/cuTENSOR accelerator selection",
    "test_syncdetect.py": "CUDA device synchronisation detection",
    "test_mdspan.py": "CUDA mdspan in raw kernels",
    "test_include.py": "CUDA headers compiled by NVRTC",
    "test_carray.py": "CUDA CArray/CIndexer internals inside kernels (int32 indexing, large arrays)",
    "test_internal.py": "cupy._core.internal (Cython helpers), not a public API",
    "test_core.py": "cupy._core internals (size_t, get_typename, CUDA memory pool)",
    "test_multithreading.py": "CUDA streams and the CUDA memory pool across threads",
    "test_scan.py": "cupy._core._routines_math.scan (CUDA scan kernel internals)",
    "test_structured.py": "structured dtypes and cupy.make_aligned_dtype (xp has no structured dtypes)",
    "fusion_tests/": "cupy.fuse's CUDA code generation (xp.fuse is tested in tests/xp/test_fuse.py)",
}


def run_folder(suite, folder, target, timeout, extra, files=None):
    report = os.path.join(tempfile.mkdtemp(prefix="cupyconf"), "report.jsonl")
    env = dict(os.environ, XP_CUPY_TARGET=target, XP_CUPY_REPORT=report,
               PYTHONPATH=os.pathsep.join([HERE, os.environ.get("PYTHONPATH", "")]))
    where = os.path.join(os.path.basename(suite), folder)
    paths = [os.path.join(where, f) for f in files] if files else [where]
    cmd = [sys.executable, "-m", "pytest", *paths, "-q", "-p", "no:cacheprovider",
           "-p", "xp_cupy_plugin", f"--timeout={timeout}",
           "-W", "ignore", "--tb=no", "--no-header", "--continue-on-collection-errors", *extra]
    t0 = time.time()
    proc = subprocess.run(cmd, cwd=os.path.dirname(suite), env=env, capture_output=True, text=True)
    outcome = {}
    if os.path.exists(report):
        with open(report) as f:
            for line in f:
                r = json.loads(line)
                if r["outcome"] != "passed" or r["id"] not in outcome:
                    outcome[r["id"]] = r["outcome"] if r["outcome"] != "passed" or r["when"] == "call" else "passed"
    if not outcome:
        print(proc.stdout[-2000:], proc.stderr[-2000:], file=sys.stderr)
    return outcome, time.time() - t0


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--suite", required=True, help="path to CuPy's tests/cupy_tests at v14.2.0")
    p.add_argument("--folders", nargs="*", default=list(FOLDERS) + ["math"],
                   help="folder names without _tests, or root files such as test_ndim.py "
                        "(default: the issue's 13 and math; 'extra' stands for EXTRA; 'core' runs "
                        "core_tests' NumPy-comparison files, CORE_FILES, reported per file)")
    p.add_argument("--timeout", type=int, default=120, help="per-test timeout, seconds")
    p.add_argument("--out", default=os.path.join(HERE, "results", "cupy_conformance.json"))
    p.add_argument("pytest_args", nargs="*", help="extra pytest arguments (e.g. -k expr)")
    args = p.parse_args()
    suite = os.path.abspath(args.suite)
    if not os.path.isdir(os.path.join(suite, "creation_tests")):
        sys.exit(f"{suite} is not CuPy's tests/cupy_tests (no creation_tests/); see this script's docstring")
    try:
        import cupy  # noqa: F401  (only checks that CuPy is installed)
    except ImportError:
        sys.exit("cupy is not installed: .venv/bin/pip install cupy-cuda12x==14.2.0 (imports without a GPU)")
    rows, data = [], {}
    print(f"{'folder':<22}{'numpy':>8}{'xp':>8}{'both':>8}{'ratio':>9}  time np/xp (s)", flush=True)
    names = [n for name in args.folders for n in (EXTRA if name == "extra" else (name,))]
    for name in names:
        folder = name if name.endswith(("_tests", ".py")) else name + "_tests"
        files = CORE_FILES + CORE_KERNEL_FILES if folder == "core_tests" else None
        np_out, t_np = run_folder(suite, folder, "numpy", args.timeout, args.pytest_args, files)
        xp_out, t_xp = run_folder(suite, folder, "xp", args.timeout, args.pytest_args, files)
        np_pass = {i for i, o in np_out.items() if o == "passed"}
        xp_pass = {i for i, o in xp_out.items() if o == "passed"}
        both = np_pass & xp_pass
        ratio = len(both) / len(np_pass) if np_pass else float("nan")
        flag = "" if ratio >= TARGET_RATIO else "  < 97%"
        print(f"{folder:<22}{len(np_pass):>8}{len(xp_pass):>8}{len(both):>8}{100 * ratio:>8.1f}%  "
              f"{t_np:.0f}/{t_xp:.0f}{flag}", flush=True)
        failing = sorted(np_pass - xp_pass)
        by_test = collections.Counter(i.split("::")[0] + "::" + i.split("::")[-1].split("[")[0] for i in failing)
        data[folder] = {"numpy_passed": len(np_pass), "xp_passed": len(xp_pass), "both": len(both),
                        "ratio": ratio, "xp_only_failures": failing, "failures_by_test": by_test.most_common(),
                        "xp_passed_numpy_not": sorted(xp_pass - np_pass)}
        if folder == "core_tests":
            data[folder]["files"] = _per_file(np_out, xp_out)
            data[folder]["not_applicable"] = CORE_NOT_APPLICABLE
        rows.append((folder, len(np_pass), len(both)))
        _write(args, data)      # after every folder, so a long run leaves its partial results
    extra = {n if n.endswith(".py") else n + "_tests" for n in EXTRA}
    for label, group in (("total (no math)", [r for r in rows if r[0] not in ("math_tests", "core_tests")
                                              and r[0] not in extra]),
                         ("total (extra)", [r for r in rows if r[0] in extra])):
        tot_np, tot_both = sum(r[1] for r in group), sum(r[2] for r in group)
        if tot_np:
            print(f"{label:<22}{tot_np:>8}{'':>8}{tot_both:>8}{100 * tot_both / tot_np:>8.1f}%")
    _write(args, data)
    print("wrote", args.out)


def _per_file(np_out, xp_out):
    """Prints and returns core_tests' figures per file (kernel files: xp passes of all IDs)."""
    per = {}
    print(f"  {'core_tests file':<34}{'numpy':>7}{'both':>7}{'ratio':>8}{'xp/all':>12}")
    for name in CORE_FILES + CORE_KERNEL_FILES:
        ids = {i for i in set(np_out) | set(xp_out) if i.split("::")[0].endswith("/" + name)}
        np_pass = {i for i in ids if np_out.get(i) == "passed"}
        xp_pass = {i for i in ids if xp_out.get(i) == "passed"}
        both = np_pass & xp_pass
        ratio = len(both) / len(np_pass) if np_pass else float("nan")
        per[name] = {"ids": len(ids), "numpy_passed": len(np_pass), "xp_passed": len(xp_pass),
                     "both": len(both), "ratio": ratio, "kernel_api": name in CORE_KERNEL_FILES}
        print(f"  {name:<34}{len(np_pass):>7}{len(both):>7}{100 * ratio:>7.1f}%{len(xp_pass):>6}/{len(ids):<5}",
              flush=True)
    return per


def _write(args, data):
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump({"command": " ".join(sys.argv), "cupy_tests": "v14.2.0", "folders": data}, f, indent=1)


if __name__ == "__main__":
    main()
