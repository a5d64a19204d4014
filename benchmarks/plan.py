"""Predicted / measured step time of the flagship (examples/train_gpt.py) on this machine (docs/plan.md).

1. The hardware file is frozen first: --hardware FILE if given, else benchmarks/plan_hardware_here.py
   runs now (microbenchmarks only) and writes benchmarks/results/plan_hardware_here.toml.
2. For each rank count (default 2 and 4): the flagship runs once under
   ``npurun --profile DIR --profile-steps 3:5`` (its step traces) and --reps times without the profiler
   (the measured step: the flagship's own ms/step over its last --measure-steps steps), alternating;
   ``python -m npudist.plan predict DIR --hardware FILE`` predicts the step from the traces.
3. Prints predicted, measured (median and best of the reps) and predicted / measured; writes JSON.

    python benchmarks/plan.py [--ranks 2 4] [--hardware FILE] [--reps 2] [--measure-steps 8]
        [--json benchmarks/results/plan.json] [-- extra flagship args]

Goal: within 15 % at 2 ranks; 4 ranks is reported (4 simulated npus share this host's
CPUs). A few minutes per rank count on a quiet 2-core machine.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
FLAGSHIP = ["examples/train_gpt.py", "--max-bytes", "400000", "--ckpt-every", "0", "--no-resume", "--sample-len", "0",
            "--eval-batches", "1"]


def _npurun(nproc: int, extra: list[str], env: dict | None = None, timeout: float = 900) -> str:
    cmd = [sys.executable, "-m", "npurun", "--nproc", str(nproc), *extra]
    e = dict(os.environ, **(env or {}))
    e["PYTHONPATH"] = REPO + os.pathsep + e.get("PYTHONPATH", "")
    r = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=timeout, env=e)
    if r.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({r.returncode}):\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}")
    return r.stdout


def measured_step_ms(nproc: int, steps: int, ckpt: str, extra: list[str]) -> float:
    """The flagship's own ms/step over its last ``steps`` steps (after ``steps`` warm-up steps)."""
    out = _npurun(nproc, [*FLAGSHIP, "--steps", str(2 * steps), "--log-every", str(steps), "--ckpt-dir", ckpt, *extra])
    ms = re.findall(r"([\d.]+) ms/step", out)
    if len(ms) < 2:
        raise SystemExit(f"no ms/step lines in the flagship's output:\n{out[-2000:]}")
    return float(ms[-1])


def predict(trace_dir: str, hw: str) -> dict:
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as f:
        out = f.name
    r = subprocess.run([sys.executable, "-m", "npudist.plan", "predict", trace_dir, "--hardware", hw, "--json", out],
                       cwd=REPO, capture_output=True, text=True, timeout=600)
    if r.returncode not in (0, 3):
        raise SystemExit(f"npudist.plan predict failed:\n{r.stdout[-2000:]}\n{r.stderr[-2000:]}")
    p = json.load(open(out))
    os.unlink(out)
    p["stdout"] = r.stdout
    return p


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ranks", type=int, nargs="+", default=[2, 4])
    ap.add_argument("--hardware", default=None, help="a frozen hardware file (default: measure one now)")
    ap.add_argument("--reps", type=int, default=2, help="measured runs per rank count")
    ap.add_argument("--measure-steps", type=int, default=8)
    ap.add_argument("--json", default=os.path.join(HERE, "results", "plan.json"))
    ap.add_argument("extra", nargs="*", help="extra flagship arguments (after --)")
    args = ap.parse_args(argv)
    t0 = time.time()
    load = os.getloadavg()[0]
    hw = args.hardware
    if hw is None:
        hw = os.path.join(HERE, "results", "plan_hardware_here.toml")
        r = subprocess.run([sys.executable, os.path.join(HERE, "plan_hardware_here.py"), "--out", hw], cwd=REPO,
                           text=True, timeout=1800)
        if r.returncode != 0:
            raise SystemExit("plan_hardware_here.py failed")
    frozen = open(hw).read()  # frozen before any flagship run
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for n in args.ranks:
            measured = []
            prof = os.path.join(tmp, f"prof{n}")
            for rep in range(args.reps):
                measured.append(measured_step_ms(n, args.measure_steps, os.path.join(tmp, f"ck{n}_{rep}"), args.extra))
                if rep == 0:  # the traced run between the measured ones
                    _npurun(n, ["--profile", prof, "--profile-steps", "3:5", *FLAGSHIP, "--steps", "5",
                                "--log-every", "5", "--ckpt-dir", os.path.join(tmp, f"ckp{n}"), *args.extra])
            p = predict(prof, hw)
            pred = p["step_time_s"] * 1e3
            med, best = statistics.median(measured), min(measured)
            rows.append({"ranks": n, "predicted_ms": pred, "measured_median_ms": med, "measured_best_ms": best,
                         "measured_all_ms": measured, "ratio": pred / med, "ratio_vs_best": pred / best,
                         "traced_ms": (p.get("measured_step_time_s") or 0) * 1e3,
                         "peak_memory_gib": p["peak_memory_gib"], "mfu": p["mfu"],
                         "tokens_per_s_per_npu": p["tokens_per_s_per_npu"],
                         "columns_rank0": [c for c in p["columns"] if c["Index"] == 0]})
            assert open(hw).read() == frozen
    print(f"\n# flagship predicted vs measured; hardware {hw}; load average {load:.1f} at start; "
          f"{args.reps} measured runs per rank count")
    print(f"{'ranks':>5} {'predicted ms':>13} {'measured ms (median)':>21} {'best':>8} {'pred/meas':>10} "
          f"{'goal':>10}")
    for r in rows:
        goal = "0.85-1.15" if r["ranks"] == 2 else "report"
        print(f"{r['ranks']:>5} {r['predicted_ms']:>13.1f} {r['measured_median_ms']:>21.1f} "
              f"{r['measured_best_ms']:>8.1f} {r['ratio']:>10.3f} {goal:>10}")
    os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
    with open(args.json, "w") as f:
        json.dump({"args": vars(args), "hardware": frozen, "load_average": load, "rows": rows,
                   "seconds": time.time() - t0}, f, indent=1)
    print(f"JSON: {args.json} ({time.time() - t0:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
