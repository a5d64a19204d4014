"""Instructions per call of xp's fixed per-op cost on 16-element arrays, against NumPy.

Timings on the shared 2-core machines swing by 2x; instruction counts do not. One process runs
under ``valgrind --tool=callgrind`` with instrumentation switched on (through a tiny helper
compiled here from valgrind's callgrind.h client requests) only around --iters calls of each
case after a warm-up, and prints instructions per call. Every case includes the death of its
result (the loop drops it), as a user's loop does; the xp cases are the calls the
xp_vs_numpy --size 16 rows make, without the stream wait (``_C._synchronize``, its own row).

Cases: NumPy's ``np.add(a, b)``, ``a > b``, ``np.sqrt(a)``, ``a * 3``; xp's ``xp.add(a, b)``,
``a + b``, ``a > b``, ``xp.sqrt(a)``, ``a * 3``, the same on uint32 (xp's exact unsigned
results), ``a + b[:1]`` (a broadcast the C fast path declines: ndarray's Python operator runs); the device core under them: ``torch.empty(16, device='npu')`` vs the same on cpu, the
torch add of two 16-element npu tensors, ``npudist._C._synchronize``. ``--annotate DIR`` keeps
the callgrind files (``callgrind_annotate DIR/xp_call_cost.out.<n>``) for a per-function view.

    python benchmarks/xp_call_cost.py [--iters 2000] [--cases add_xp gt_xp ...] [--json benchmarks/results/xp_call_cost.json] [--annotate DIR]
"""
import argparse
import glob
import json
import os
import re
import shutil
import subprocess
import sys

from _callgrind import helper_lib

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)

# name: (statement, NumPy's counterpart case or None); a, b: 16 float32 (xa, xb the xp arrays), ua/ub uint32
CASES = {
    "add_np": "np.add(a, b)",
    "add_xp": "xp.add(xa, xb)",
    "plus_xp": "xa + xb",
    "gt_np": "a > b",
    "gt_xp": "xa > xb",
    "sqrt_np": "np.sqrt(a)",
    "sqrt_xp": "xp.sqrt(xa)",
    "mul3_np": "a * 3",
    "mul3_xp": "xa * 3",
    "plus_bcast_np": "a + b1",
    "plus_bcast_xp": "xa + xb1",
    "add_u32_np": "np.add(ua_np, ub_np)",
    "add_u32_xp": "xp.add(ua, ub)",
    "empty_npu": "torch.empty(16, device=npu)",
    "empty_cpu": "torch.empty(16)",
    "torch_add_npu": "ta + tb",
    "torch_add_cpu": "tca + tcb",
    "sync": "sync(dev)",
}
PAIRS = [("add", "add_np", "add_xp"), ("a + b", "add_np", "plus_xp"), ("a > b", "gt_np", "gt_xp"),
         ("sqrt", "sqrt_np", "sqrt_xp"), ("a * 3", "mul3_np", "mul3_xp"), ("add uint32", "add_u32_np", "add_u32_xp"),
         ("a + b[:1]", "plus_bcast_np", "plus_bcast_xp"),
         ("torch.empty(16)", "empty_cpu", "empty_npu"), ("torch add", "torch_add_cpu", "torch_add_npu")]


def child(cases, iters, warmup, lib):
    import ctypes

    import numpy as np
    import torch

    import npudist.xp as xp
    from npudist import _C

    torch.set_num_threads(1)
    cg = ctypes.CDLL(lib)
    a = np.arange(1, 17, dtype=np.float32)
    b = a + 0.5
    ua_np, ub_np = np.arange(16, dtype=np.uint32), np.arange(16, dtype=np.uint32) * 3
    xa, xb, ua, ub = xp.asarray(a), xp.asarray(b), xp.asarray(ua_np), xp.asarray(ub_np)
    b1, xb1 = b[:1].copy(), xp.asarray(b[:1])   # broadcast: the C fast path declines, the Python operator runs
    ta, tb = xa._t, xb._t
    tca, tcb = ta.cpu(), tb.cpu()
    dev = torch.npu.current_device()
    npu = torch.device("npu", dev)
    sync = _C._synchronize
    env = dict(np=np, xp=xp, torch=torch, a=a, b=b, b1=b1, xb1=xb1, xa=xa, xb=xb, ua=ua, ub=ub, ua_np=ua_np, ub_np=ub_np,
               ta=ta, tb=tb, tca=tca, tcb=tcb, dev=dev, npu=npu, sync=sync)
    for name in cases:
        # the loop as a function of its own: only the statement and the loop's few bytecodes are counted
        src = f"def loop(n):\n    for _ in range(n):\n        {CASES[name]}\n"
        exec(src, env)
        loop = env["loop"]
        loop(warmup)
        sync(dev)
        cg.cg_start()
        loop(iters)
        cg.cg_stop()
        sync(dev)


def totals(path):
    with open(path) as f:
        for line in f:
            if line.startswith(("totals:", "summary:")):
                return int(line.split()[1])
    raise RuntimeError(f"no totals in {path}")


def run(cases, iters, warmup, lib, out_dir):
    out = os.path.join(out_dir, "xp_call_cost.out")
    for old in glob.glob(out + "*"):
        os.remove(old)
    cmd = ["valgrind", "--tool=callgrind", "--instr-atstart=no", "--collect-atstart=no",
           f"--callgrind-out-file={out}", sys.executable, os.path.abspath(__file__), "--child",
           "--iters", str(iters), "--warmup", str(warmup), "--cases", *cases]
    env = dict(os.environ, NPUDIST_BENCH_CG_LIB=lib, OMP_NUM_THREADS="1", PYTHONHASHSEED="0")
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=REPO)
    if r.returncode != 0:
        tail = "\n".join(r.stderr.strip().splitlines()[-15:])
        raise RuntimeError(f"callgrind run failed:\n{tail}")
    dumps = sorted(glob.glob(out + ".*"), key=lambda p: int(re.search(r"\.(\d+)$", p).group(1)))
    dumps = [p for p in dumps if re.search(r"\.\d+$", p)]
    if len(dumps) != len(cases):
        raise RuntimeError(f"expected {len(cases)} callgrind dumps, found {len(dumps)} in {out_dir}")
    return {name: totals(p) / iters for name, p in zip(cases, dumps)}, dumps


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--iters", type=int, default=2000)
    ap.add_argument("--warmup", type=int, default=200)
    ap.add_argument("--cases", nargs="+", default=list(CASES), choices=list(CASES))
    ap.add_argument("--json", default=os.path.join(HERE, "results", "xp_call_cost.json"))
    ap.add_argument("--annotate", default=None, help="keep the callgrind files in this directory")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        return child(a.cases, a.iters, a.warmup, os.environ["NPUDIST_BENCH_CG_LIB"])
    if not shutil.which("valgrind"):
        raise SystemExit("valgrind is not installed (Debian: apt-get install valgrind)")
    lib = helper_lib()
    out_dir = a.annotate or os.path.join(REPO, "build", "bench_callgrind")
    os.makedirs(out_dir, exist_ok=True)
    per_call, dumps = run(a.cases, a.iters, a.warmup, lib, out_dir)
    print(f"instructions per call (callgrind, {a.iters} calls after {a.warmup} warm-up; the result dies in the loop)")
    print(f"{'case':16s} {'statement':32s} {'instructions':>13s}")
    for name in a.cases:
        print(f"{name:16s} {CASES[name]:32s} {per_call[name]:13,.0f}")
    ratios = {}
    print(f"\n{'pair':16s} {'reference':>10s} {'measured':>10s} {'ratio':>6s}")
    for label, ref, cur in PAIRS:
        if ref in per_call and cur in per_call:
            ratios[label] = per_call[cur] / per_call[ref]
            print(f"{label:16s} {per_call[ref]:10,.0f} {per_call[cur]:10,.0f} {ratios[label]:6.2f}")
    if a.annotate:
        print("callgrind files:", ", ".join(f"{n}: {p}" for n, p in zip(a.cases, dumps)))
    os.makedirs(os.path.dirname(a.json), exist_ok=True)
    with open(a.json, "w") as fh:
        json.dump({"iters": a.iters, "warmup": a.warmup, "per_call": per_call, "ratios": ratios,
                   "command": "python " + " ".join(sys.argv)}, fh, indent=1)
    print(f"JSON: {a.json}")


if __name__ == "__main__":
    main()
