"""The teardown soak: many short jobs of varied shapes, counting what must never
happen at teardown.

Jobs: started with torch.multiprocessing's spawn (workers/teardown_spawn.py) or with npurun
(workers/teardown_job.py); 2 or 3 ranks; modes of teardown_job (destroy_process_group or not,
async collectives in flight at exit, a gloo sub-group, DeviceMesh + FSDP2, an exception in one
rank); model widths 8-64. Counted per job:

- abnormal exits: a rank killed by a signal it was not sent by its launcher after a failure
  (SIGABRT, SIGSEGV, ...), "terminate called" / "core dumped" in the output, or a non-zero
  exit code the script did not cause (only mode ``raise`` fails on purpose);
- leaked /dev/shm entries of the job's tag (named by the engine's rule, npudist/_shm_names.py;
  for npurun jobs, the entries npurun had to remove count too);
- orphans: processes still alive after the job that carry its ``NPUDIST_SOAK_ID``.

``python -m tests.hccl.teardown_soak --jobs 200 --seed 25`` prints one line per abnormal job
and a JSON summary; tests/hccl/test_teardown.py runs it in the full tier.
"""
import argparse
import json
import os
import random
import re
import signal
import subprocess
import sys
import tempfile
import time
import uuid

from npudist import _shm_names
from npudist.testing import multiproc
from npudist.testing.npurun import run_npurun

WORKERS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "workers")
MODES = ("destroy", "nodestroy", "inflight", "gloo", "raise")
BAD_TEXT = re.compile(r"terminate called|core dumped|Segmentation fault|Fatal Python error|Aborted")


def _orphans(soak_id):
    found = []
    marker = f"NPUDIST_SOAK_ID={soak_id}".encode()
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                if marker in f.read().split(b"\0"):
                    found.append(int(pid))
        except OSError:
            pass
    return found


def run_job(kind, mode, world, size, timeout=300):
    """Runs one job; returns a dict with its shape, outcome and the problems found."""
    soak_id = uuid.uuid4().hex[:12]
    tag = "soak" + soak_id
    env = {"NPUDIST_JOB_TAG": tag, "NPUDIST_SOAK_ID": soak_id, "TORCH_HCCL_ASYNC_ERROR_HANDLING": "0"}
    problems = []
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="teardown-soak-") as out:
        if kind == "spawn":
            argv = [sys.executable, os.path.join(WORKERS, "teardown_spawn.py"), "1", out, mode, str(world), str(size)]
            try:
                p = subprocess.run(argv, env=multiproc.clean_env({**env, "OMP_NUM_THREADS": "1"}), cwd=multiproc.REPO,
                                   capture_output=True, text=True, timeout=timeout)
                text, code = p.stdout + p.stderr, p.returncode
            except subprocess.TimeoutExpired as e:
                text, code = f"timed out after {timeout} s: {e.stdout}{e.stderr}", None
                problems.append("timeout")
            results = multiproc.parse_results(text)
            exitcodes = results[-1]["exitcodes"] if results else None
            if exitcodes is None:
                problems.append(f"no result (launcher exit code {code})")
            else:
                for r, c in enumerate(exitcodes):
                    expected = {0} if mode != "raise" else ({1} if r == 1 else {0, -signal.SIGTERM})
                    if c not in expected:
                        problems.append(f"rank {r} exit code {c}" + (f" ({signal.Signals(-c).name})" if c and c < 0 else ""))
        else:
            r = run_npurun(["--nproc", str(world), os.path.join(WORKERS, "teardown_job.py"), mode, str(size)],
                           env={**env, "TEARDOWN_OUT": out}, timeout=timeout)
            text, code = r.stdout + r.stderr, r.returncode
            exitcodes = [code]
            if code != (1 if mode == "raise" else 0):
                problems.append(f"npurun exit code {code}")
            if mode == "raise" and "rank 1 failed first" not in text:
                problems.append("npurun did not report rank 1 as the first failure")
            m = re.search(r"removed (\d+) leftover /dev/shm entr", text)
            if m:
                problems.append(f"npurun removed {m.group(1)} /dev/shm entries the job left")
            if re.search(r"killed by SIG(?!TERM|KILL)", text):
                problems.append("a rank was killed by a signal")
        if BAD_TEXT.search(text):
            problems.append("abort text: " + BAD_TEXT.search(text).group(0))
        for name in os.listdir(out):
            if name.startswith("rank") and name.endswith(".json"):
                found = json.load(open(os.path.join(out, name)))
                if found.get("after_destroy") and any(n.startswith("hccl-") for n in found["after_destroy"]):
                    problems.append(f"{name}: hccl threads after destroy_process_group: {found['after_destroy']}")
                if found.get("after_shutdown"):
                    problems.append(f"{name}: threads after shutdown: {found['after_shutdown']}")
    leaked = [n for n in os.listdir("/dev/shm") if n.startswith(_shm_names.job_prefix(tag))]
    if leaked:
        problems.append(f"leaked /dev/shm entries: {leaked}")
        for n in leaked:
            try:
                os.unlink(os.path.join("/dev/shm", n))
            except OSError:
                pass
    orphans = _orphans(soak_id)
    if orphans:
        problems.append(f"orphans: {orphans}")
        for pid in orphans:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
    return {"kind": kind, "mode": mode, "world": world, "size": size, "exitcodes": exitcodes,
            "seconds": round(time.monotonic() - t0, 1), "problems": problems,
            "tail": text[-1500:] if problems else ""}


def soak(jobs, seed, log=None):
    """Runs ``jobs`` jobs of shapes drawn with ``seed``; returns the summary dict."""
    rng = random.Random(seed)
    summary = {"jobs": 0, "abnormal": 0, "leaked_shm": 0, "orphans": 0, "by_shape": {}, "failures": []}
    t0 = time.monotonic()
    for i in range(jobs):
        kind = rng.choice(("spawn", "npurun"))
        res = run_job(kind, rng.choice(MODES), rng.choice((2, 2, 3)), rng.choice((8, 16, 32, 64)))
        summary["jobs"] += 1
        key = f"{res['kind']}/{res['mode']}"
        summary["by_shape"][key] = summary["by_shape"].get(key, 0) + 1
        if res["problems"]:
            summary["failures"].append(res)
            if any(p.startswith("leaked") or p.startswith("npurun removed") for p in res["problems"]):
                summary["leaked_shm"] += 1
            if any(p.startswith("orphans") for p in res["problems"]):
                summary["orphans"] += 1
            if any(not (p.startswith("leaked") or p.startswith("npurun removed") or p.startswith("orphans"))
                   for p in res["problems"]):
                summary["abnormal"] += 1
        if log:
            log(f"[{i + 1}/{jobs}] {key} world={res['world']} size={res['size']} {res['seconds']} s "
                f"{'; '.join(res['problems']) or 'ok'}")
    summary["seconds"] = round(time.monotonic() - t0, 1)
    return summary


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--jobs", type=int, default=200)
    ap.add_argument("--seed", type=int, default=25)
    ap.add_argument("--json", help="also write the summary here")
    a = ap.parse_args()
    s = soak(a.jobs, a.seed, log=lambda line: print(line, flush=True))
    print(json.dumps({k: v for k, v in s.items() if k != "failures"}, indent=1))
    for f in s["failures"]:
        print(json.dumps(f, indent=1))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(s, f, indent=1)
    sys.exit(1 if s["failures"] else 0)


if __name__ == "__main__":
    main()
