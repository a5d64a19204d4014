"""Time and peak host memory (RSS) of ``python -m npudist.plan capture`` on a 70B-parameter decoder (docs/plan.md).

The job: a LLaMA-2-70B-shaped decoder (dim 8192, 64 heads, 8 key/value heads, SwiGLU 28672, vocab 32000,
80 layers) at TP8 PP4 on 64 npus, sequence 4096, micro-batch 1, bf16 FSDP2 over the data-parallel ranks.
The capture does not run pipelines yet (docs/plan.md, "Pipeline parallelism"): its design captures one
process per stage, so the unit measured here is ONE STAGE: 20 of the 80 layers (``--layers``), TP8 x FSDP2
dp2 on the stage's 16 ranks (2 nodes of 8), which is what each stage's process would run. ``--layers 80
--nnodes 8`` measures the whole model without pipelining (TP8 x dp8 on 64).

Each repetition runs the capture in a fresh process (tests/plan/workers/train_decoder.py, a plain npurun
script) and reads that process's wall time and peak RSS (``os.wait4``). Goal: <= 5 min and <= 8 GiB on
2 cores; the table prints each figure and its ratio to the goal (there is no other tool on this machine
that traces a 70B job: a real run does not fit).

    python benchmarks/plan_capture.py [--layers 20] [--nnodes 2] [--reps 1] [--json benchmarks/results/plan_capture.json]

A few minutes per repetition on a quiet 2-core machine.
"""
from __future__ import annotations

import argparse
import datetime
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from _results import write_json  # noqa: E402  (benchmarks/ is not a package)

SCRIPT = os.path.join(REPO, "tests", "plan", "workers", "train_decoder.py")
HW = "atlas800t-a2-910b3"  # a shipped hardware file (npudist/plan/hardware_files): the prediction printed is for it
GOAL_S, GOAL_GIB = 300.0, 8.0


def capture_once(a, out: str) -> dict:
    cmd = [sys.executable, "-m", "npudist.plan", "capture", "--hardware", a.hardware, "--nnodes", str(a.nnodes),
           "--nproc-per-node", "8", "--out", out, SCRIPT, "--dim", "8192", "--heads", "64", "--kv-heads", "8",
           "--ffn", "28672", "--vocab", "32000", "--layers", str(a.layers), "--seq", str(a.seq), "--batch", "1",
           "--tp", "8", "--steps", "2"]
    env = dict(os.environ, PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""))
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    text = p.stdout.read()
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t0
    code = os.waitstatus_to_exitcode(status)
    if code not in (0, 3):  # 3: the stage does not fit the hardware file's device (still a capture)
        raise SystemExit(f"capture failed ({code}):\n{text[-4000:]}")
    line = next((ln for ln in text.splitlines() if ln.startswith("captured rank")), "")
    return {"wall_s": wall, "peak_rss_gib": ru.ru_maxrss * 1024 / 2**30, "cpu_s": ru.ru_utime + ru.ru_stime,
            "exit_code": code, "captured": line}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--layers", type=int, default=20, help="layers captured (20: one stage of PP4 over 80)")
    ap.add_argument("--nnodes", type=int, default=2, help="nodes of 8 the capture stands for (2: a stage's 16 ranks)")
    ap.add_argument("--seq", type=int, default=4096)
    ap.add_argument("--reps", type=int, default=1)
    ap.add_argument("--hardware", default=HW)
    ap.add_argument("--json", default=os.path.join(HERE, "results", "plan_capture.json"))
    a = ap.parse_args()
    rows = []
    for i in range(a.reps):
        with tempfile.TemporaryDirectory() as d:
            rows.append(capture_once(a, d))
        print(f"rep {i + 1}: {rows[-1]['wall_s']:.1f} s, {rows[-1]['peak_rss_gib']:.2f} GiB", file=sys.stderr)
    best_t = min(r["wall_s"] for r in rows)
    best_m = min(r["peak_rss_gib"] for r in rows)
    print(f"capture of a 70B decoder: {a.layers} layers, TP8, {a.nnodes} x 8 ranks, seq {a.seq} "
          f"({a.reps} reps; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs)")
    print(f"{'figure':<22}{'best':>10}{'median':>10}{'goal':>8}{'best/goal':>11}")
    med = sorted(rows, key=lambda r: r["wall_s"])[len(rows) // 2]
    print(f"{'wall time (s)':<22}{best_t:>10.1f}{med['wall_s']:>10.1f}{GOAL_S:>8.0f}{best_t / GOAL_S:>11.2f}")
    print(f"{'CPU time (s)':<22}{min(r['cpu_s'] for r in rows):>10.1f}{med['cpu_s']:>10.1f}{'':>8}{'':>11}")
    print(f"{'peak RSS (GiB)':<22}{best_m:>10.2f}{med['peak_rss_gib']:>10.2f}{GOAL_GIB:>8.0f}{best_m / GOAL_GIB:>11.2f}")
    print(rows[0]["captured"])
    write_json(a.json, {"benchmark": "plan_capture", "date": datetime.datetime.now(datetime.UTC).isoformat(),
                        "layers": a.layers, "nnodes": a.nnodes, "seq": a.seq, "tp": 8, "reps": rows,
                        "goal_s": GOAL_S, "goal_gib": GOAL_GIB, "load_average": os.getloadavg()})


if __name__ == "__main__":
    main()
