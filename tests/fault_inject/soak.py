"""A randomized fault soak of the flagship job (issue 44, item 4).

    python -m tests.fault_inject.soak --runs 20 --seed 1        # from the repository root

Each run draws a fault kind, the rank it hits, the restart round it fires in and its trigger,
all from ``--seed``:

- ``kill_step``: SIGKILL at a step;
- ``kill_ckpt_write`` / ``kill_ckpt_write_async``: SIGKILL half-way through a checkpoint write
  (``dcp.save``, or ``dcp.async_save`` with ``--async-ckpt``), leaving a torn checkpoint;
- ``hang``: the rank never joins a collective (the short ``--pg-timeout`` ends it);
- ``slow``: every Kth collective of the rank starts ``--pg-timeout`` + 2 s late (so the first
  one times out);
- ``oom``: an npu allocation raises ``torch.OutOfMemoryError``;
- ``store_down``: the store hccl talks through stops answering shortly after start (group set-up
  fails after the store timeout);
- ``kill_restart``: a kill at a step, then a second kill of a rank at the first step of the
  restarted round (in its first optimizer step: after it loaded the checkpoint, before it wrote
  a new one).

A fault drawn for restart round 1 or 2 is preceded by kills at a step in the earlier rounds (a
later round exists only after a failure); its trigger counts from the restarted process's start.
Every run trains examples/train_gpt.py (2 ranks, tiny model, dropout on, ``--steps`` steps,
checkpoints every ``--ckpt-every``) under ``npurun --max-restarts 3`` and checks: exit 0; every
injected fault named in the log (``(injected: SPEC)``); every step's loss and the final checkpoint
(model, AdamW state, every rank's RNG state) bit-equal to the unfaulted run's; no process of the
job left (psutil); no /dev/shm entry of the job left. It also times each restart: from the
agent's detection of the failure (its ``failed (exitcode`` line) to the first training step after
the resume. Prints one line per run and a summary by kind; ``--json`` writes every run's record;
exits 1 if any run failed a check.

- ``partition`` (two-host tier: root, network namespaces, npudist.testing.netns): the job runs on
  two namespace hosts x ``nproc`` ranks; from its Nth collective one rank's traffic to the other
  host stalls, every rank times out, both hosts' npurun restart and the job resumes. Checked as
  above against an unfaulted run on two hosts, plus: both hosts restarted, no process left in
  either host's namespace, nothing left in either host's /dev/shm. Always round 0. Without the
  tier a drawn ``partition`` is skipped (the draw after it is used; the soak says how many and why).

``--jobs N`` runs N runs at once (a run mostly waits: on the group timeout, on npurun's restart,
on ranks starting). Each run is its own job: its npurun rendezvous on a free port, its own
checkpoint directory, job tag (so its own /dev/shm names) and flight-recorder dump prefix; the
orphan and leak checks look only at the processes naming its directory and the entries of its tag.
The draws do not depend on ``--jobs``, and neither do the results (bit-exact is per run).

``--resume JSON`` finishes a soak cut short (``--max-minutes``, a stopped machine): the runs in
JSON are kept and only the others run, checked against an unfaulted run of this sitting.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import re
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor

KINDS = ("kill_step", "kill_ckpt_write", "kill_ckpt_write_async", "hang", "slow", "oom", "store_down", "kill_restart",
         "partition")
TWO_HOST_KINDS = ("partition",)  # drawn like the others; run only where the two-host tier is available
COLLECTIVES_PER_STEP = 11  # the tiny model's collectives a step, at least (722 in 60 steps, checkpoints included)
ALLOCS_PER_STEP = 400  # its npu allocations a step, at least (29767 in 60 steps on rank 1, 2026-12-02, was 51557)


def _trigger(kind: str, rng: random.Random, steps: int, ckpt_every: int, pg_timeout: float, later: bool) -> str:
    """The fields of a ``kind`` fault. ``later``: in a restarted round, whose process counts from
    its resume and has at least ``2 * ckpt_every`` steps left."""
    span = ckpt_every if later else steps  # steps the process surely runs
    if kind in ("kill_step", "kill_restart"):
        return f"step={rng.randint(2, max(2, span - 1))},kind=kill"
    if kind.startswith("kill_ckpt_write"):
        return f"ckpt_write={1 if later else rng.randint(1, max(1, (steps - 1) // ckpt_every))},kind=kill"
    if kind == "hang":
        return f"collective={rng.randint(20, COLLECTIVES_PER_STEP * span)},kind=hang"
    if kind == "slow":
        delay = int((pg_timeout + 2) * 1000)
        return f"every={rng.randint(20, COLLECTIVES_PER_STEP * span)},delay_ms={delay},kind=slow"
    if kind == "oom":
        return f"alloc={rng.randint(200, ALLOCS_PER_STEP * span)},kind=oom"
    if kind == "store_down":
        return f"after_s={rng.randint(0, 5) / 10},kind=store_down"
    if kind == "partition":
        return f"collective={rng.randint(20, COLLECTIVES_PER_STEP * span)},kind=partition"
    raise ValueError(f"unknown soak kind {kind!r}")


def draw(rng: random.Random, steps: int, ckpt_every: int, nproc: int, pg_timeout: float = 8.0):
    """(kind, restart round, [npurun --inject-fault specs], extra job args) of one run.

    Round 0 faults fire in the first attempt; a fault in round r > 0 comes after kills at a step
    in rounds 0..r-1, each at a step that leaves ``2 * ckpt_every`` steps after its resume point.
    ``kill_restart`` is always round 1: a kill in round 0, then a kill at round 1's first step.
    ``partition`` is always round 0, its rank among the ``2 * nproc`` ranks of two hosts.
    """
    kind = rng.choice(KINDS)
    rnd = 1 if kind == "kill_restart" else rng.choice((0, 0, 0, 1, 1, 2))
    if kind == "partition":  # two hosts x nproc ranks; the partitioned rank stalls towards the other host
        rank = rng.randrange(2 * nproc)
        peers = "+".join(str(r) for r in range(2 * nproc) if (r < nproc) != (rank < nproc))
        return kind, 0, [f"rank={rank},restart=0,peers={peers}," + _trigger(kind, rng, steps, ckpt_every, pg_timeout,
                                                                            False)], []
    specs = []
    for r in range(rnd):
        hi = steps - 2 * ckpt_every if r == 0 else ckpt_every  # round r>0: its steps count from the resume
        step = rng.randint(2, max(2, hi))
        specs.append(f"rank={rng.randrange(nproc)},restart={r},step={step},kind=kill")
    rank = rng.randrange(nproc)
    if kind == "kill_restart":
        specs.append(f"rank={rank},restart=1,step=1,kind=kill")
    else:
        specs.append(f"rank={rank},restart={rnd}," + _trigger(kind, rng, steps, ckpt_every, pg_timeout, rnd > 0))
    extra = ["--async-ckpt"] if kind == "kill_ckpt_write_async" else []
    return kind, rnd, specs, extra


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


def restart_times(lines: list[tuple[float, str]]) -> list[float]:
    """Seconds from each detected failure (torch's agent: ``failed (exitcode``) to the next
    ``first step after resume`` line, in order; a failure with no resume after it is left out."""
    out, detected = [], None
    for t, line in lines:
        if detected is None and "failed (exitcode" in line:
            detected = t
        elif detected is not None and "first step after resume: step" in line:
            out.append(t - detected)
            detected = None
    return out


def kill_leftovers(pids: list[int]) -> None:
    """SIGKILL the processes a failed run left behind (a stuck C++ wait ignores SIGTERM)."""
    import signal

    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def _check(rc, text, specs, losses_path, final_dir, scratch, ref) -> list[str]:
    """The problems of one finished run: exit code, unnamed faults, losses or final state unlike ``ref``."""
    from npudist.testing.flagship import differences, load_checkpoint, read_losses

    problems = []
    if rc != 0:
        problems.append(f"exit code {rc}")
    unnamed = [s for s in specs if f"(injected: {s})" not in text]
    if unnamed:
        problems.append(f"fault(s) not named in the log: {unnamed}")
    if rc == 0:
        try:
            if read_losses(losses_path) != ref[0]:
                problems.append("losses differ from the unfaulted run's")
        except ValueError as e:
            problems.append(str(e))
        diff = differences(load_checkpoint(final_dir, scratch), ref[1])
        if diff:
            problems.append(f"final state differs: {', '.join(diff[:5])}")
    return problems


def run_two_hosts(workdir, nproc, job, ckpt_dir, loss_log, fault=None, timeout=900.0):
    """The flagship on two namespace hosts x ``nproc`` ranks (c10d rendezvous at host 0, ``npurun
    --max-restarts 3``), ``fault`` in NPUDIST_FAULT_INJECT. Returns (lines [(s, line)] of both
    hosts in time order, wall s, [exit codes], [restart lines per host], [(pids, shm) per host after
    the job]). Raises npudist.testing.netns.NetnsUnavailable without the tier."""
    import subprocess

    from npudist.testing import netns
    from tests.fault_inject import two_hosts

    args = [str(a) for a in job] + ["--ckpt-dir", str(ckpt_dir), "--loss-log", str(loss_log)]
    extra = {"TORCH_HCCL_DEBUG_INFO_TEMP_FILE": f"{ckpt_dir}_fr_"}  # the hosts share the machine's /tmp
    if fault:
        extra["NPUDIST_FAULT_INJECT"] = fault
    with netns.TwoHosts(workdir) as hosts:
        lines: list[tuple[float, str]] = []
        per_host: list[list[str]] = [[], []]
        t0 = time.monotonic()
        argv = two_hosts.npurun_argv(hosts, args, nproc=nproc, rdzv_id="soak", max_restarts=3)
        procs = [hosts.popen(i, argv, env=two_hosts.env(**extra), stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True, cwd=two_hosts.REPO) for i in range(2)]

        def read(i):
            for line in procs[i].stdout:
                lines.append((time.monotonic() - t0, f"[host{i}] {line}"))
                per_host[i].append(line)

        readers = [threading.Thread(target=read, args=(i,), daemon=True) for i in range(2)]
        for t in readers:
            t.start()
        codes = []
        for p in procs:
            try:
                codes.append(p.wait(timeout=max(1.0, timeout - (time.monotonic() - t0))))
            except subprocess.TimeoutExpired:
                codes.append(None)
        wall = time.monotonic() - t0
        for t in readers:
            t.join(10)
        time.sleep(1)  # the hosts' last processes (npurun's children) end after npurun's exit
        after = [(hosts.pids(i), hosts.shm_entries(i)) for i in range(2)]
    restarts = [sum("npurun: restarting the job" in x for x in h) for h in per_host]
    return sorted(lines, key=lambda x: x[0]), wall, codes, restarts, after


def suppress(fn, *args) -> None:
    """``fn(*args)``, its exception dropped (kept and reported elsewhere)."""
    try:
        fn(*args)
    except Exception:  # noqa: BLE001 - the caller records it where it matters
        pass


def soak(runs: int, seed: int, steps: int = 60, ckpt_every: int = 10, nproc: int = 2, pg_timeout: float = 8.0,
         log=print, kinds=KINDS, jobs: int = 1, max_s: float | None = None, on_run=None,
         done: dict[int, dict] | None = None) -> list[dict]:
    """Runs the soak; returns one dict per run (kind, round, specs, ok, problems, wall_s,
    restart_s), in draw order. The unfaulted reference runs once per configuration (the two-host
    one only if a ``partition`` is drawn), when the first run of that configuration is to be
    checked: with ``jobs`` > 1 it runs beside the first runs. ``kinds`` narrows the draw (same seed, same
    draws otherwise); ``jobs`` runs that many at once (module docstring). ``max_s``: no run starts
    later than this many seconds after the soak began (the runs not started are left out of the
    result, and the log says how many). ``on_run(results so far)`` is called after every run (under
    a lock), e.g. to save them. ``done``: {run index: record} of runs of the same draws already run
    (``--resume``): kept as they are, not run again, and included in the result."""
    from npudist.testing import netns
    from npudist.testing.flagship import TINY, load_checkpoint, read_losses, run_flagship

    rng = random.Random(seed)
    job = [*TINY, "--steps", steps, "--ckpt-every", ckpt_every, "--log-every", steps, "--pg-timeout", pg_timeout]
    final = f"step_{steps:07d}"
    no_tier = netns.unavailable_reason()
    draws, skipped, i = [], 0, 0
    while len(draws) < runs:
        kind, rnd, specs, extra = draw(rng, steps, ckpt_every, nproc, pg_timeout)
        i += 1
        if kind not in kinds:
            continue
        if kind in TWO_HOST_KINDS and no_tier:
            skipped += 1
            continue
        draws.append((i, kind, rnd, specs, extra))
    if skipped:
        log(f"soak: skipped {skipped} partition draw(s): two-host tier unavailable ({no_tier})")
    results: list[dict | None] = [None] * runs
    for n, rec in (done or {}).items():
        if 0 <= n < runs:
            if (rec["kind"], rec["specs"]) != (draws[n][1], draws[n][3]):
                raise ValueError(f"soak: resumed run {n} was {rec['kind']} {rec['specs']}, this soak draws "
                                 f"{draws[n][1]} {draws[n][3]} there (another two-host tier or soak version)")
            results[n] = rec
    todo = [(n, item) for n, item in enumerate(draws) if results[n] is None]
    lock = threading.Lock()
    with tempfile.TemporaryDirectory(prefix="npudist_soak_") as tmp:
        refs: dict[str, tuple | Exception] = {}
        ref_locks = {"one_host": threading.Lock(), "two_hosts": threading.Lock()}

        def reference(where: str):
            with ref_locks[where]:
                if where not in refs:
                    try:
                        refs[where] = unfaulted(where)
                    except Exception as e:  # noqa: BLE001 - kept, and raised to every run that needs it
                        refs[where] = e
            if isinstance(refs[where], Exception):
                raise refs[where]
            return refs[where]

        def unfaulted(where: str):
            d = os.path.join(tmp, f"ref_{where}")
            if where == "one_host":
                lines, _, rc = run_flagship(["--nproc", nproc], job, d, d + ".loss",
                                            env={"TORCH_HCCL_DEBUG_INFO_TEMP_FILE": d + "_fr_"})
                rcs = [rc]
            else:
                lines, _, rcs, _, _ = run_two_hosts(d + "_hosts", nproc, job, d, d + ".loss")
            if rcs != [0] * len(rcs):
                raise RuntimeError(f"the unfaulted reference run ({where}) failed:\n"
                                   + "".join(x for _, x in lines[-40:]))
            return read_losses(d + ".loss"), load_checkpoint(os.path.join(d, final), d + ".pt")

        def one(n: int, item) -> None:
            if max_s is not None and time.monotonic() - t0 > max_s:
                return
            t_start = time.monotonic()
            try:
                rec, lines = run(n, item, t_start)
            except Exception as e:  # noqa: BLE001 - a run that could not even be checked is a failed run
                i, kind, rnd, specs, extra = item
                kill_leftovers(job_leftovers(f"soak{seed}x{i}", os.path.join(tmp, f"run{i}"))[0])
                rec = {"run": n, "seed": seed, "kind": kind, "round": rnd, "specs": specs, "extra": extra,
                       "wall_s": round(time.monotonic() - t_start, 2), "restarts": 0, "restart_s": [], "ok": False,
                       "problems": [f"soak error: {type(e).__name__}: {e}"], "exit": None, "orphans": 0,
                       "leaks": 0, "jobs": jobs, "started_s": round(t_start - t0, 2)}
                lines = []
            shown = ";".join(rec["specs"]) + (" " + " ".join(rec["extra"]) if rec["extra"] else "")
            with lock:
                results[n] = rec
                if on_run is not None:
                    on_run([r for r in results if r is not None])
                log(f"run {n:3d} {rec['kind']:22} r{rec['round']} {shown:70} {rec['wall_s']:6.1f} s  restarts "
                    f"{rec['restarts']}  {'ok' if rec['ok'] else 'FAILED: ' + '; '.join(rec['problems'])}")
                if not rec["ok"]:
                    log("".join(x for _, x in lines[-60:]))

        def run(n: int, item, t_start: float):
            i, kind, rnd, specs, extra = item
            tag = f"soak{seed}x{i}"
            d = os.path.join(tmp, f"run{i}")
            if kind in TWO_HOST_KINDS:
                lines, wall, codes, host_restarts, after = run_two_hosts(d + "_hosts", nproc, [*job, *extra], d,
                                                                         d + ".loss", fault=";".join(specs))
                ref = reference("two_hosts")
                rc = next((c for c in codes if c != 0), 0)
                rc = -1 if rc is None else rc
                text = "".join(x for _, x in lines)
                problems = _check(rc, text, specs, d + ".loss", os.path.join(d, final), d + ".pt", ref)
                if min(host_restarts) < 1:
                    problems.append(f"not both hosts restarted (restarts per host: {host_restarts})")
                machine_pids, _ = job_leftovers(tag, d)  # the hosts' npurun wrappers (ip netns exec ...)
                pids = sorted({p for ps, _ in after for p in ps} | set(machine_pids))
                shm = [f"host{h}:{e}" for h, (_, es) in enumerate(after) for e in es]
                restarts = max(host_restarts)
            else:
                fault_args = [a for s in specs for a in ("--inject-fault", s)]
                lines, wall, rc = run_flagship(["--nproc", nproc, "--max-restarts", 3, *fault_args],
                                               [*job, *extra], d, d + ".loss",
                                               env={"NPUDIST_JOB_TAG": tag, "TORCH_HCCL_DEBUG_INFO_TEMP_FILE": d + "_fr_"})
                ref = reference("one_host")
                text = "".join(x for _, x in lines)
                problems = _check(rc, text, specs, d + ".loss", os.path.join(d, final), d + ".pt", ref)
                pids, shm = job_leftovers(tag, d)
                restarts = len(re.findall(r"npurun: restarting the job", text))
            if pids:
                problems.append(f"orphan processes {pids}")
                kill_leftovers(pids)
            if shm:
                problems.append(f"/dev/shm leftovers {shm}")
            rs = restart_times(lines)
            rec = {"run": n, "seed": seed, "kind": kind, "round": rnd, "specs": specs, "extra": extra,
                   "wall_s": round(wall, 2), "restarts": restarts, "restart_s": [round(x, 2) for x in rs],
                   "ok": not problems, "problems": problems, "exit": rc, "orphans": len(pids), "leaks": len(shm),
                   "jobs": jobs, "started_s": round(t_start - t0, 2)}
            return rec, lines

        t0 = time.monotonic()
        if jobs <= 1:
            for n, item in todo:
                one(n, item)
        else:
            with ThreadPoolExecutor(jobs) as pool:
                # the references first, beside the first runs (a run checks against them when it ends)
                wheres = sorted({"two_hosts" if d[1] in TWO_HOST_KINDS else "one_host" for _, d in todo})
                futures = [pool.submit(suppress, reference, w) for w in wheres]
                futures += [pool.submit(one, n, item) for n, item in todo]
                for f in futures:
                    f.result()
    done = [r for r in results if r is not None]
    if len(done) < len(draws):
        log(f"soak: {len(draws) - len(done)} of {len(draws)} runs not started (past max_s={max_s} s)")
    return done


def summary(res: list[dict]) -> dict:
    """Counts the issue's figures name: runs, by kind (runs, finished, bit-exact), orphans, leaks."""
    by_kind: dict[str, dict] = {}
    for r in res:
        k = by_kind.setdefault(r["kind"], {"runs": 0, "finished": 0, "ok": 0, "restart_s": [], "wall_s": []})
        k["wall_s"].append(r["wall_s"])
        k["runs"] += 1
        k["finished"] += r["exit"] == 0
        k["ok"] += r["ok"]
        # the drawn fault's own restart: the round-r one, when every restart of the run resumed from
        # a checkpoint (a restart from step 0 prints no resume line, and the pairing would shift).
        # kill_restart's second kill fires in the first optimizer step, before the resume line:
        # its time runs from the first detection to the last attempt's first step (two restarts).
        rs = r["restart_s"]
        if r["kind"] == "kill_restart" and len(rs) == r["restarts"] - 1 == 1:
            k["restart_s"].append(rs[0])
        elif r["kind"] != "kill_restart" and len(rs) == r["restarts"] and r["round"] < len(rs):
            k["restart_s"].append(rs[r["round"]])
    return {"runs": len(res), "finished": sum(r["exit"] == 0 for r in res), "ok": sum(r["ok"] for r in res),
            "orphans": sum(r["orphans"] for r in res), "leaks": sum(r["leaks"] for r in res), "by_kind": by_kind}


def table(s: dict) -> str:
    """The summary as a Markdown table: by kind, runs, finished, bit-exact (passed every check),
    restarts timed and their median / max seconds (detection to first step after resume), and
    the runs' median wall seconds (the whole job, every restart included)."""
    import statistics

    out = ["| kind | runs | finished | all checks passed | restarts timed | restart s median | restart s max | "
           "run s median |", "|---|---|---|---|---|---|---|---|"]
    for k, v in sorted(s["by_kind"].items()):
        rs = v["restart_s"]
        med = f"{statistics.median(rs):.1f}" if rs else "-"
        walls = v.get("wall_s", [])
        wall = f"{statistics.median(walls):.1f}" if walls else "-"
        out.append(f"| {k} | {v['runs']} | {v['finished']} | {v['ok']} | {len(rs)} | {med} | "
                   f"{max(rs) if rs else '-'} | {wall} |")
    out.append(f"| **all** | {s['runs']} | {s['finished']} | {s['ok']} | | | | |")
    return "\n".join(out) + f"\n\norphan processes: {s['orphans']}; /dev/shm leftovers: {s['leaks']}"


SAME_SOAK = ("runs", "seed", "steps", "ckpt_every", "pg_timeout", "kinds")
"""The arguments two sittings of one soak must share: they decide the draws and the checks."""


def resume(path: str, a) -> tuple[dict[int, dict], list[dict]]:
    """({run index: record}, earlier sittings) of the runs in ``path`` (a ``--json`` file) that
    ``--resume`` keeps, each record marked with the sitting it ran in (1, 2, ...), and each earlier
    sitting's ``args`` and ``wall_s``; raises SystemExit naming the file and the argument when it was
    written by another soak."""
    try:
        with open(path) as f:
            old = json.load(f)
        old_args, runs = old["args"], old["runs"]
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise SystemExit(f"soak: --resume {path}: not a soak --json file ({type(e).__name__}: {e})") from None
    for k in SAME_SOAK:
        if old_args.get(k) != getattr(a, k):
            raise SystemExit(f"soak: --resume {path}: written with --{k.replace('_', '-')} {old_args.get(k)!r}, "
                             f"this soak has {getattr(a, k)!r}; a resumed soak must draw the same runs")
    earlier = old.get("earlier_sittings", []) + [{"args": old_args, "wall_s": old.get("wall_s")}]
    return {int(r["run"]): dict(r, sitting=r.get("sitting", 1)) for r in runs}, earlier


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--runs", type=int, default=10)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--steps", type=int, default=60, help="steps per run (the issue's: 60)")
    p.add_argument("--ckpt-every", type=int, default=10, help="checkpoint interval (the issue's: 10)")
    p.add_argument("--pg-timeout", type=float, default=8.0, help="the job's process-group timeout, seconds")
    p.add_argument("--kinds", default=",".join(KINDS), help="comma-separated subset of " + ", ".join(KINDS))
    p.add_argument("--jobs", type=int, default=1, help="runs at once, each its own job (module docstring)")
    p.add_argument("--max-minutes", type=float, help="start no run after this many minutes (the runs done are kept)")
    p.add_argument("--json", help="write every run's record and the summary to this file (after every run)")
    p.add_argument("--resume", metavar="JSON",
                   help="keep the runs recorded in this --json file of the same soak (same --seed, --runs, --steps, "
                        "--ckpt-every, --pg-timeout, --kinds) and run only the others")
    p.add_argument("--summarize", nargs="+", metavar="JSON",
                   help="run nothing: print the table of the runs in these --json files together")
    a = p.parse_args(argv)
    if a.summarize:
        res = []
        for path in a.summarize:
            with open(path) as f:
                res += json.load(f)["runs"]
        print(table(summary(res)))
        return 0
    kinds = tuple(k for k in a.kinds.split(",") if k)
    bad = [k for k in kinds if k not in KINDS]
    if bad:
        p.error(f"--kinds: {bad} not among {', '.join(KINDS)}")
    if a.steps < 3 * a.ckpt_every:
        p.error(f"--steps {a.steps} must be at least 3 x --ckpt-every {a.ckpt_every} (faults in restarted rounds)")
    if a.jobs < 1:
        p.error(f"--jobs {a.jobs}: must be at least 1")
    done, earlier = resume(a.resume, a) if a.resume else (None, [])
    sitting = 1 + max((r["sitting"] for r in (done or {}).values()), default=0)
    t0 = time.monotonic()

    def save(res):
        for r in res:
            r.setdefault("sitting", sitting)
        if a.json:
            with open(a.json, "w") as f:
                json.dump({"args": vars(a), "wall_s": round(time.monotonic() - t0, 1),
                           "earlier_sittings": earlier, "summary": summary(res), "runs": res}, f, indent=1)

    res = soak(a.runs, a.seed, a.steps, a.ckpt_every, pg_timeout=a.pg_timeout, kinds=kinds, jobs=a.jobs,
               max_s=a.max_minutes * 60 if a.max_minutes else None, on_run=save, done=done)
    save(res)
    print(f"soak: {time.monotonic() - t0:.0f} s wall for {len(res)} runs with --jobs {a.jobs}")
    s = summary(res)
    print(f"soak: {s['runs']} runs, {s['finished']} finished, {s['ok']} passed every check, {s['orphans']} orphans, "
          f"{s['leaks']} leaks; by kind: "
          + ", ".join(f"{k} {v['ok']}/{v['runs']}" for k, v in sorted(s["by_kind"].items())))
    return 0 if s["ok"] == s["runs"] else 1


if __name__ == "__main__":
    sys.exit(main())
