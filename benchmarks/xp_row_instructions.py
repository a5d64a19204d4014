"""Instructions per call of every 16-element xp_vs_numpy row, xp and NumPy side by side.

Timings on the shared 2-core machine swing by 2x; instruction counts, counted by valgrind's
callgrind, do not. One process runs under ``valgrind --tool=callgrind`` with instrumentation off;
for each (op, dtype) row of ``benchmarks/xp_vs_numpy.py`` at 16 elements it warms the call up, then
switches collection on (through a tiny helper compiled here from valgrind's callgrind.h client
requests) around --iters calls of the NumPy side and then of the xp side (each xp call followed by
``npudist._C._synchronize``, as xp_vs_numpy times it), dumping the counts per side. Prints
instructions per call (xp, NumPy, xp - NumPy, xp / NumPy) per row, the medians over rows (the
instruction-count analogue of xp_vs_numpy's 16-element figure: median xp / median NumPy), and
writes JSON. One torch thread on each side.

    python benchmarks/xp_row_instructions.py [--iters 200] [--ops sum where ...]
        [--json benchmarks/results/xp_row_instructions.json] [--keep DIR]
"""
import argparse
import glob
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

from _callgrind import helper_lib

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)


def child(iters, only, lib):
    import ctypes

    import numpy as np
    import torch

    import npudist.xp as xp
    from npudist import _C

    sys.path.insert(0, HERE)
    import xp_vs_numpy

    torch.set_num_threads(1)
    try:
        from threadpoolctl import threadpool_limits
        threadpool_limits(1)
    except ImportError:
        pass
    cg = ctypes.CDLL(lib)
    dev = torch.npu.current_device()
    for name, (dts, setup, fn) in xp_vs_numpy.ops(16).items():
        if only and name not in only:
            continue
        for dt in dts:
            args_np, args_xp = setup(np, dt), setup(xp, dt)
            f_np = lambda: fn(np, *args_np)  # noqa: E731  (a local one-line callable)

            def f_xp():
                r = fn(xp, *args_xp)
                _C._synchronize(dev)
                return r
            for side, f in (("numpy", f_np), ("xp", f_xp)):
                for _ in range(20):
                    f()
                cg.cg_start_collect()
                for _ in range(iters):
                    f()
                cg.cg_stop_named(f"{side}|{name}|{dt}".encode())


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--iters", type=int, default=200)
    ap.add_argument("--ops", nargs="*", default=None, help="only these xp_vs_numpy ops (default: all)")
    ap.add_argument("--json", default=os.path.join(HERE, "results", "xp_row_instructions.json"))
    ap.add_argument("--keep", default=None, help="keep the callgrind files in this directory (callgrind_annotate)")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        return child(a.iters, a.ops, os.environ["NPUDIST_BENCH_CG_LIB"])
    if not shutil.which("valgrind"):
        raise SystemExit("valgrind is not installed (Debian: apt-get install valgrind)")
    lib = helper_lib()
    out_dir = a.keep or tempfile.mkdtemp(prefix="xp_rows_cg_")
    os.makedirs(out_dir, exist_ok=True)
    for old in glob.glob(os.path.join(out_dir, "cg.out*")):
        os.remove(old)
    env = dict(os.environ, NPUDIST_BENCH_CG_LIB=lib, OMP_NUM_THREADS="1")
    cmd = ["valgrind", "--tool=callgrind", "--instr-atstart=yes", "--collect-atstart=no",
           f"--callgrind-out-file={os.path.join(out_dir, 'cg.out')}", sys.executable, os.path.abspath(__file__),
           "--child", "--iters", str(a.iters)] + (["--ops", *a.ops] if a.ops else [])
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=REPO)
    if r.returncode != 0:
        raise SystemExit("callgrind run failed:\n" + "\n".join(r.stderr.strip().splitlines()[-15:]))
    counts, order = {}, {}
    for path in glob.glob(os.path.join(out_dir, "cg.out*")):
        with open(path) as f:
            text = f.read()
        trig = re.search(r"^desc: Trigger: Client Request: (\S+)", text, re.M)
        tot = re.search(r"^(?:totals|summary): (\d+)", text, re.M)
        if trig and tot and "|" in trig.group(1):
            side, op, dt = trig.group(1).split("|")
            counts.setdefault((op, dt), {})[side] = int(tot.group(1)) / a.iters
            seq = re.search(r"\.(\d+)$", path)
            order.setdefault((op, dt), int(seq.group(1)) if seq else 0)
    rows = [{"op": op, "dtype": dt, "xp": c["xp"], "numpy": c["numpy"]}
            for (op, dt), c in sorted(counts.items(), key=lambda kv: order[kv[0]]) if "xp" in c and "numpy" in c]
    if not rows:
        raise SystemExit(f"no counts found in {out_dir}")
    print(f"instructions per call, 16 elements (callgrind, {a.iters} calls per side, one torch thread)")
    print(f"{'op':15s} {'dtype':8s} {'numpy':>9s} {'xp':>9s} {'xp-numpy':>9s} {'xp/numpy':>8s}")
    for r_ in rows:
        print(f"{r_['op']:15s} {r_['dtype']:8s} {r_['numpy']:9,.0f} {r_['xp']:9,.0f} {r_['xp'] - r_['numpy']:9,.0f} "
              f"{r_['xp'] / r_['numpy']:8.2f}")
    med_xp = statistics.median(r_["xp"] for r_ in rows)
    med_np = statistics.median(r_["numpy"] for r_ in rows)
    print(f"median over {len(rows)} rows: xp {med_xp:,.0f} vs NumPy {med_np:,.0f} instructions = {med_xp / med_np:.2f}x")
    os.makedirs(os.path.dirname(a.json), exist_ok=True)
    with open(a.json, "w") as fh:
        json.dump({"iters": a.iters, "rows": rows, "median_xp": med_xp, "median_numpy": med_np,
                   "ratio": med_xp / med_np, "command": "python " + " ".join(sys.argv)}, fh, indent=1)
    print(f"JSON: {a.json}")

if __name__ == "__main__":
    main()
