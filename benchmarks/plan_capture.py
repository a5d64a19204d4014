"""Time and peak host memory (RSS) of ``python -m npudist.plan capture`` on a 70B-parameter decoder (docs/plan.md).

The job: a LLaMA-2-70B-shaped decoder (dim 8192, 64 heads, 8 key/value heads, SwiGLU 28672, vocab 32000,
80 layers) at TP8 PP4 on 64 npus (8 nodes of 8), sequence 4096, micro-batch 1, 4 micro-batches per step (1F1B),
bf16 FSDP2 over the data-parallel ranks (dp 2), the script tests/plan/workers/train_decoder.py run unmodified
(torch.distributed.pipelining stages WITHOUT static metadata: torch exchanges the shapes between stages).
The capture traces one rank per stage (``--ranks 0,16,32,48``): four processes run at once (they rendezvous for
the pipeline's warm-up vote and shape exchange), under the one ``capture`` command measured here.
``--pp 1 --layers 20 --nnodes 2`` measures one stage's layers alone without pipelining (the previous unit).

Each repetition runs the whole command in a fresh process tree and reports its wall time, the peak of the SUM of
the processes' RSS (sampled every 0.2 s from /proc: the stages run together, so their memory adds up) and the
largest single process's peak RSS (``os.wait4``: the tree's largest). Goal: <= 5 min and <= 8 GiB on 2 cores;
the table prints each figure and its ratio to the goal (no other tool on this machine traces a 70B job: a real
run does not fit).

    python benchmarks/plan_capture.py [--pp 4] [--layers 80] [--nnodes 8] [--reps 1] [--json benchmarks/results/plan_capture.json]

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


def _tree(pid: int) -> list[int]:
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        try:
            with open(f"/proc/{p}/task/{p}/children") as f:
                todo += [int(c) for c in f.read().split()]
        except OSError:
            pass
    return out


def _rss(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status") as f:
            return next(int(ln.split()[1]) * 1024 for ln in f if ln.startswith("VmRSS:"))
    except (OSError, StopIteration):
        return 0


def capture_once(a, out: str) -> dict:
    # rank 0's pipeline group in a (pp, dp, tp) mesh: stride dp x tp
    world = a.nnodes * 8
    ranks = ",".join(str(s * world // a.pp) for s in range(a.pp))
    cmd = [sys.executable, "-m", "npudist.plan", "capture", "--hardware", a.hardware, "--nnodes", str(a.nnodes),
           "--nproc-per-node", "8", "--out", out, "--ranks", ranks, SCRIPT, "--dim", "8192", "--heads", "64",
           "--kv-heads", "8", "--ffn", "28672", "--vocab", "32000", "--layers", str(a.layers), "--seq", str(a.seq),
           "--tp", "8", "--steps", "2", *(["--pp", str(a.pp), "--batch", str(a.microbatches), "--microbatches",
                                          str(a.microbatches)] if a.pp > 1 else ["--batch", "1"])]
    env = dict(os.environ, PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""))
    t0 = time.perf_counter()
    with tempfile.TemporaryFile("w+") as log:
        p = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT, text=True)
        peak_sum = 0
        while True:  # wait4, not Popen.poll: its rusage holds the tree's CPU time and largest RSS
            pid, status, ru = os.wait4(p.pid, os.WNOHANG)
            if pid:
                break
            peak_sum = max(peak_sum, sum(_rss(q) for q in _tree(p.pid)))
            time.sleep(0.2)
        wall = time.perf_counter() - t0
        log.seek(0)
        text = log.read()
    code = os.waitstatus_to_exitcode(status)
    if code not in (0, 3):  # 3: a stage does not fit the hardware file's device (still a capture)
        raise SystemExit(f"capture failed ({code}):\n{text[-4000:]}")
    lines = [ln for ln in text.splitlines() if ln.startswith("captured rank")]
    return {"wall_s": wall, "peak_rss_sum_gib": peak_sum / 2**30, "peak_rss_max_gib": ru.ru_maxrss * 1024 / 2**30,
            "cpu_s": ru.ru_utime + ru.ru_stime, "exit_code": code, "ranks": ranks, "captured": lines}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--pp", type=int, default=4, help="pipeline stages, one captured rank each (1: no pipeline)")
    ap.add_argument("--layers", type=int, default=80, help="decoder layers of the whole model (80: LLaMA-2-70B)")
    ap.add_argument("--nnodes", type=int, default=8, help="nodes of 8 npus (8: the 64-npu job)")
    ap.add_argument("--microbatches", type=int, default=4, help="micro-batches of 1 sequence per step (with --pp)")
    ap.add_argument("--seq", type=int, default=4096)
    ap.add_argument("--reps", type=int, default=1)
    ap.add_argument("--hardware", default=HW)
    ap.add_argument("--json", default=os.path.join(HERE, "results", "plan_capture.json"))
    a = ap.parse_args()
    rows = []
    for i in range(a.reps):
        with tempfile.TemporaryDirectory() as d:
            rows.append(capture_once(a, d))
        print(f"rep {i + 1}: {rows[-1]['wall_s']:.1f} s, {rows[-1]['peak_rss_sum_gib']:.2f} GiB", file=sys.stderr)
    med = sorted(rows, key=lambda r: r["wall_s"])[len(rows) // 2]
    print(f"capture of a 70B decoder: {a.layers} layers, TP8 PP{a.pp} on {a.nnodes} x 8 npus, seq {a.seq}, "
          f"--ranks {rows[0]['ranks']} ({a.reps} reps; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs)")
    print(f"{'figure':<34}{'best':>10}{'median':>10}{'goal':>8}{'best/goal':>11}")
    for name, key, goal in (("wall time (s)", "wall_s", GOAL_S), ("CPU time, all processes (s)", "cpu_s", None),
                            ("peak RSS, sum of processes (GiB)", "peak_rss_sum_gib", GOAL_GIB),
                            ("peak RSS, largest process (GiB)", "peak_rss_max_gib", None)):
        best = min(r[key] for r in rows)
        ratio = f"{best / goal:>11.2f}" if goal else f"{'':>11}"
        print(f"{name:<34}{best:>10.2f}{med[key]:>10.2f}{goal or '':>8}{ratio}")
    for line in rows[0]["captured"]:
        print(line)
    write_json(a.json, {"benchmark": "plan_capture", "date": datetime.datetime.now(datetime.UTC).isoformat(),
                        "layers": a.layers, "pp": a.pp, "nnodes": a.nnodes, "seq": a.seq, "tp": 8,
                        "microbatches": a.microbatches, "reps": rows, "goal_s": GOAL_S, "goal_gib": GOAL_GIB,
                        "load_average": os.getloadavg()})


if __name__ == "__main__":
    main()
