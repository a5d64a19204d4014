"""A randomized fault soak of the flagship job (issue 44, item 4; partial, see below).

    python -m tests.fault_inject.soak --runs 20 --seed 1        # from the repository root

Each run draws a fault kind, a rank and its trigger from ``--seed``: kill at a step, kill
during a checkpoint write (sync, or ``--async-ckpt``), or hang at a collective (the short
``--pg-timeout`` ends it). It runs examples/train_gpt.py (2 ranks, tiny model, dropout on,
``--steps`` steps, checkpoints every ``--ckpt-every``) under ``npurun --max-restarts 3`` and
checks: exit 0; the fault named in the log; every step's loss and the final checkpoint
(model, AdamW state, every rank's RNG state) bit-equal to the unfaulted run's; no process of
the job left (psutil); no /dev/shm entry of the job left. Prints one line per run and a
summary; exits 1 if any run failed a check.

Not yet: oom, store_down and partition faults, faults in a later restart round, and a kill
during the restart itself (each run injects one fault, in the first attempt).
"""
from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile

KINDS = ("kill_step", "kill_ckpt_write", "kill_ckpt_write_async", "hang")


def draw(rng: random.Random, steps: int, ckpt_every: int, nproc: int):
    """(kind, npurun --inject-fault spec, extra job args) of one run."""
    kind = rng.choice(KINDS)
    rank = rng.randrange(nproc)
    if kind == "kill_step":
        return kind, f"rank={rank},step={rng.randint(2, steps - 1)},kind=kill", []
    if kind.startswith("kill_ckpt_write"):
        n_writes = (steps - 1) // ckpt_every  # periodic saves before the final one
        extra = ["--async-ckpt"] if kind.endswith("async") else []
        return kind, f"rank={rank},ckpt_write={rng.randint(1, max(1, n_writes))},kind=kill", extra
    # the tiny model issues ~18 collectives a step: somewhere in the run
    return kind, f"rank={rank},collective={rng.randint(20, 10 * steps)},kind=hang", []


def job_leftovers(tag: str, marker: str) -> tuple[list[int], list[str]]:
    """(pids of processes whose command line names `marker`, /dev/shm entries of job `tag`)."""
    import psutil

    from npudist import _shm_names

    pids = []
    for p in psutil.process_iter(["pid", "cmdline"]):
        try:
            if p.info["pid"] != os.getpid() and any(marker in a for a in (p.info["cmdline"] or [])):
                pids.append(p.info["pid"])
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    shm = sorted(f for f in os.listdir("/dev/shm") if f.startswith(_shm_names.job_prefix(tag)))
    return pids, shm


def soak(runs: int, seed: int, steps: int = 20, ckpt_every: int = 5, nproc: int = 2, pg_timeout: float = 8.0,
         log=print) -> list[dict]:
    """Runs the soak; returns one dict per run (kind, spec, ok, problems). The first run is the
    unfaulted reference."""
    from npudist.testing.flagship import TINY, differences, load_checkpoint, read_losses, run_flagship

    rng = random.Random(seed)
    job = [*TINY, "--steps", steps, "--ckpt-every", ckpt_every, "--log-every", steps, "--pg-timeout", pg_timeout]
    results = []
    with tempfile.TemporaryDirectory(prefix="npudist_soak_") as tmp:
        ref_dir = os.path.join(tmp, "ref")
        lines, _, rc = run_flagship(["--nproc", nproc], job, ref_dir, ref_dir + ".loss")
        if rc != 0:
            raise RuntimeError("the unfaulted reference run failed:\n" + "".join(x for _, x in lines[-40:]))
        ref_losses = read_losses(ref_dir + ".loss")
        ref_state = load_checkpoint(os.path.join(ref_dir, f"step_{steps:07d}"), ref_dir + ".pt")
        for i in range(runs):
            kind, spec, extra = draw(rng, steps, ckpt_every, nproc)
            tag = f"soak{seed}x{i}"
            d = os.path.join(tmp, f"run{i}")
            lines, wall, rc = run_flagship(["--nproc", nproc, "--max-restarts", 3, "--inject-fault", spec],
                                           [*job, *extra], d, d + ".loss", env={"NPUDIST_JOB_TAG": tag})
            text = "".join(x for _, x in lines)
            problems = []
            if rc != 0:
                problems.append(f"exit code {rc}")
            if "[npudist fault] rank " not in text:
                problems.append("the fault is not named in the log")
            if rc == 0:
                try:
                    if read_losses(d + ".loss") != ref_losses:
                        problems.append("losses differ from the unfaulted run's")
                except ValueError as e:
                    problems.append(str(e))
                diff = differences(load_checkpoint(os.path.join(d, f"step_{steps:07d}"), d + ".pt"), ref_state)
                if diff:
                    problems.append(f"final state differs: {', '.join(diff[:5])}")
            pids, shm = job_leftovers(tag, d)
            if pids:
                problems.append(f"orphan processes {pids}")
            if shm:
                problems.append(f"/dev/shm leftovers {shm}")
            results.append({"run": i, "kind": kind, "spec": spec + (" " + " ".join(extra) if extra else ""),
                            "wall_s": wall, "ok": not problems, "problems": problems})
            log(f"run {i:3d} {kind:22} {results[-1]['spec']:44} {wall:6.1f} s  "
                f"{'ok' if not problems else 'FAILED: ' + '; '.join(problems)}")
            if problems:
                log("".join(x for _, x in lines[-40:]))
    return results


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--runs", type=int, default=10)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--steps", type=int, default=20, help="steps per run (the issue's full soak: 60)")
    p.add_argument("--ckpt-every", type=int, default=5, help="checkpoint interval (the issue's full soak: 10)")
    p.add_argument("--pg-timeout", type=float, default=8.0)
    a = p.parse_args(argv)
    res = soak(a.runs, a.seed, a.steps, a.ckpt_every, pg_timeout=a.pg_timeout)
    by_kind: dict[str, list[int]] = {}
    for r in res:
        by_kind.setdefault(r["kind"], [0, 0])
        by_kind[r["kind"]][0] += 1
        by_kind[r["kind"]][1] += r["ok"]
    print(f"soak: {len(res)} runs, {sum(r['ok'] for r in res)} passed every check; by kind: "
          + ", ".join(f"{k} {ok}/{n}" for k, (n, ok) in sorted(by_kind.items())))
    return 0 if all(r["ok"] for r in res) else 1


if __name__ == "__main__":
    sys.exit(main())
