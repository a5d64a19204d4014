"""Restart time per fault kind: the flagship job (examples/train_gpt.py, tiny model, dropout on)
under ``npurun --max-restarts 1`` with one injected fault, beside the same job unfaulted.

For each kind this measures, from npurun's output as it arrives (rank 0's progress line every
step, ``--log-every 1``):

- detect: from the fault firing (the rank's ``[npudist fault]`` line) to the first line of the
  restarted attempt's rank 0 (npurun saw the failure, stopped the others and started again);
- restart: from the fault firing to the first training step finished after the resume
  (detection + relaunch + imports + resharding the checkpoint + one step);
- job: the whole job's wall time, and its ratio to the unfaulted job's (same run, interleaved);
- exact: whether the losses of every step and the final checkpoint equal the unfaulted run's.

Kinds: kill at a step; kill during a checkpoint write (sync, and async_save); hang (the rank
never joins a collective; ``--pg-timeout`` bounds the wait, so restart time is dominated by it);
slow (the rank's collectives start ``--pg-timeout`` + 2 s late: the first delayed one times out);
oom (an npu allocation raises OutOfMemoryError); store_down (the store hccl talks through stops
answering at start: group set-up fails after the store timeout; the restart starts from step 0);
kill_restart (a kill at a step, then a kill at the first step of the restarted attempt: two
restarts, times from the first fault to the first step of the last attempt).

    python benchmarks/fault_restart.py                # 2 ranks, 16 steps, 1 repetition, all kinds
    python benchmarks/fault_restart.py --reps 3 --kinds kill_step,hang --pg-timeout 10

Prints a table and writes benchmarks/results/fault_restart.json. The machine's load goes
straight into these times: compare kinds and ratios from one run, not figures across runs.
"""
import argparse
import json
import os
import re
import statistics
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

from npudist.testing.flagship import TINY, differences, load_checkpoint, read_losses, run_flagship  # noqa: E402  (after the repository is on sys.path)

KINDS = {
    "kill_step": ("rank=1,step={fault_step},kind=kill", []),
    "kill_ckpt_write": ("rank=1,ckpt_write=2,kind=kill", []),
    "kill_ckpt_write_async": ("rank=0,ckpt_write=2,kind=kill", ["--async-ckpt"]),
    "hang": ("rank=1,collective={fault_collective},kind=hang", []),
    "slow": ("rank=1,every={fault_collective},delay_ms={slow_ms},kind=slow", []),
    "oom": ("rank=1,alloc={fault_alloc},kind=oom", []),
    "store_down": ("rank=1,after_s=0,kind=store_down", []),
    "kill_restart": ("rank=1,step={fault_step},kind=kill;rank=0,restart=1,step=1,kind=kill", []),
}


def model_args(a):
    return [*TINY, "--log-every", "1", "--ckpt-every", str(a.ckpt_every), "--steps", str(a.steps),
            "--pg-timeout", str(a.pg_timeout)]


def run(a, tmp, name, spec=None, extra=()):
    """Runs one job; returns (timestamped output lines, wall seconds, exit code, ckpt dir, loss log)."""
    ckpt, log = os.path.join(tmp, name), os.path.join(tmp, name + ".loss")
    faults = [x for part in (spec.split(";") if spec else []) for x in ("--inject-fault", part)]
    npurun = ["--nproc", str(a.nproc)] + (["--max-restarts", str(len(faults) // 2), *faults] if spec else [])
    lines, wall, rc = run_flagship(npurun, [*model_args(a), *extra], ckpt, log, timeout=a.job_timeout)
    return lines, wall, rc, ckpt, log


def first(lines, pattern, after=0.0):
    rx = re.compile(pattern)
    return next((ts for ts, line in lines if ts >= after and rx.search(line)), None)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--nproc", type=int, default=2)
    p.add_argument("--steps", type=int, default=16)
    p.add_argument("--ckpt-every", type=int, default=5)
    p.add_argument("--pg-timeout", type=float, default=8.0, help="process-group timeout (s): bounds the hang case")
    p.add_argument("--reps", type=int, default=1, help="repetitions of each kind (and of the unfaulted job)")
    p.add_argument("--kinds", default=",".join(KINDS), help=f"comma-separated subset of {', '.join(KINDS)}")
    p.add_argument("--job-timeout", type=float, default=900)
    p.add_argument("--out", default=os.path.join(REPO, "benchmarks", "results", "fault_restart.json"))
    a = p.parse_args()
    kinds = [k for k in a.kinds.split(",") if k]
    for k in kinds:
        if k not in KINDS:
            p.error(f"unknown kind {k!r}; kinds are {', '.join(KINDS)}")
    fault_step = a.ckpt_every + 2  # after the first checkpoint: the restart resumes from it
    rows = {k: [] for k in ["unfaulted", *kinds]}
    with tempfile.TemporaryDirectory(prefix="fault_restart_") as tmp:
        for rep in range(a.reps):
            for name in ["unfaulted", *kinds]:
                spec, extra = (None, []) if name == "unfaulted" else KINDS[name]
                if spec:
                    # hang: a collective after the first checkpoint (the tiny model issues ~18 a step)
                    spec = spec.format(fault_step=fault_step, fault_collective=fault_step * 25,
                                       slow_ms=int((a.pg_timeout + 2) * 1000), fault_alloc=fault_step * 850)
                lines, wall, rc, ckpt, log = run(a, tmp, f"{name}_{rep}", spec, extra)
                row = {"wall_s": wall, "rc": rc}
                if rc != 0:
                    row["error"] = "".join(line for _, line in lines[-30:])
                if spec:
                    t_fault = first(lines, r"\[npudist fault\] rank \d+:")
                    # the last attempt's first line (kill_restart restarts twice), and its first step
                    starts = [ts for ts, line in lines if t_fault and ts >= t_fault and "train_gpt: " in line
                              and re.search(r"train_gpt: \d+ ranks on", line)]
                    t_restart = starts[-1] if starts else None
                    t_step = first(lines, r"step +\d+/\d+ \|", after=t_restart) if t_restart else None
                    m = [re.search(r"resumed from \S+ at step (\d+)", line) for _, line in lines]
                    m = [x for x in m if x]
                    row["resumed_at"] = int(m[0].group(1)) if m else 0
                    row.update(detect_s=(t_restart - t_fault) if t_restart and t_fault else None,
                               restart_s=(t_step - t_fault) if t_step and t_fault else None)
                if rc == 0:
                    row["losses"] = read_losses(log)
                    row["state"] = os.path.join(tmp, f"{name}_{rep}.pt")
                    load_checkpoint(os.path.join(ckpt, f"step_{a.steps:07d}"), row["state"])
                rows[name].append(row)
                print(f"  {name} rep {rep}: rc {rc}, {wall:.1f} s", flush=True)
        import torch
        ref = rows["unfaulted"][0]
        ref_state = torch.load(ref["state"], weights_only=False) if "state" in ref else None
        table = []
        for name in ["unfaulted", *kinds]:
            rs = rows[name]
            ok = [r for r in rs if r["rc"] == 0]
            exact = sum(1 for r in ok if r["losses"] == ref.get("losses") and ref_state is not None
                        and not differences(torch.load(r["state"], weights_only=False), ref_state))

            def med(key, rs=rs):
                vals = [r[key] for r in rs if r.get(key) is not None]
                return statistics.median(vals) if vals else None
            unf = statistics.median(r["wall_s"] for r in rows["unfaulted"])
            table.append({"kind": name, "runs": len(rs), "finished": len(ok), "bit_exact": exact,
                          "detect_s": med("detect_s"), "restart_s": med("restart_s"), "job_s": med("wall_s"),
                          "job_ratio": med("wall_s") / unf,
                          "resumed_at": sorted({r["resumed_at"] for r in rs if "resumed_at" in r}),
                          "errors": [r["error"] for r in rs if "error" in r]})
    print(f"\nfault restart, {a.nproc} ranks, {a.steps} steps, checkpoints every {a.ckpt_every}, "
          f"--pg-timeout {a.pg_timeout}, {a.reps} rep(s), medians")
    print(f"{'kind':24} {'runs':>4} {'done':>4} {'exact':>5} {'detect s':>9} {'restart s':>9} {'job s':>7} "
          f"{'x unfaulted':>11} resumed at")

    def fmt(v):
        return f"{v:9.1f}" if v is not None else f"{'-':>9}"
    for r in table:
        print(f"{r['kind']:24} {r['runs']:4d} {r['finished']:4d} {r['bit_exact']:5d} {fmt(r['detect_s'])} "
              f"{fmt(r['restart_s'])} {r['job_s']:7.1f} {r['job_ratio']:11.2f} {r['resumed_at'] or '-'}")
    os.makedirs(os.path.dirname(a.out), exist_ok=True)
    with open(a.out, "w") as f:
        json.dump({"benchmark": "fault_restart", "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                   "args": vars(a), "load_avg": os.getloadavg(), "rows": table}, f, indent=1)
    print(f"wrote {a.out}")


if __name__ == "__main__":
    main()
