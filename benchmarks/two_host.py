"""FSDP2 training step across two real hosts vs on one host: same model, same 4 ranks.

Two hosts are made on this machine with npudist.testing.netns (network, mount and UTS
namespaces joined by a veth pair; needs root). examples/train_gpt.py (FSDP2, fp32, AdamW)
runs under npurun either as 2 hosts x 2 ranks (c10d rendezvous across the veth link; hccl
uses shared memory within a host and Gloo between the hosts) or as 1 host x 4 ranks (all
shared memory), alternately, --reps times each. A run's step time is the median of its
progress windows' "ms/step" after the first window (warm-up). Prints the median and best per
setup and the ratio two-host / one-host; writes JSON.

    sudo .venv/bin/python benchmarks/two_host.py [--reps 3] [--steps 30] [--batch 4]
"""
import argparse
import json
import os
import re
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, REPO)

from npudist.testing.netns import TwoHosts  # noqa: E402  (after the repository is on sys.path)
from tests.fault_inject import two_hosts  # noqa: E402  (after the repository is on sys.path)


def step_ms(log_text):
    windows = [float(x) for x in re.findall(r"\|\s*([0-9.]+) ms/step", log_text)]
    if len(windows) < 2:
        raise RuntimeError("no step times in the output:\n" + log_text[-3000:])
    return statistics.median(windows[1:])


def one_run(hosts, setup, args, workdir, k):
    model = two_hosts.MODEL + ["--batch-size", str(args.batch), "--steps", str(args.steps), "--log-every",
                               str(args.log_every), "--ckpt-every", "0", "--no-resume",
                               "--ckpt-dir", os.path.join(workdir, f"ckpt-{setup}-{k}")]
    idx = [0, 1] if setup == "two-host" else [0]
    logs = [os.path.join(workdir, f"{setup}-{k}-{i}.log") for i in idx]
    procs = [two_hosts.start(hosts, i, logs[n], model, nnodes=len(idx), nproc=2 if setup == "two-host" else 4,
                             rdzv_id=f"{setup}{k}") for n, i in enumerate(idx)]
    codes = [p.wait(timeout=900) for p in procs]
    with open(logs[0]) as f:
        text = f.read()
    if codes != [0] * len(procs):
        raise RuntimeError(f"{setup} run {k} failed {codes}:\n{text[-3000:]}")
    return step_ms(text)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--log-every", type=int, default=5)
    p.add_argument("--batch", type=int, default=4)
    p.add_argument("--json", default=os.path.join(HERE, "results", "two_host.json"))
    args = p.parse_args()
    os.makedirs(os.path.dirname(args.json), exist_ok=True)
    load = os.getloadavg()
    times = {"one-host": [], "two-host": []}
    with tempfile.TemporaryDirectory(prefix="two_host-") as workdir, TwoHosts(os.path.join(workdir, "hosts")) as hosts:
        for k in range(args.reps):
            for setup in ("one-host", "two-host"):
                t = one_run(hosts, setup, args, workdir, k)
                times[setup].append(t)
                print(f"rep {k}: {setup:8s} {t:8.1f} ms/step", flush=True)
    med = {s: statistics.median(v) for s, v in times.items()}
    best = {s: min(v) for s, v in times.items()}
    print(f"\nFSDP2 train_gpt step, 4 ranks, model {' '.join(two_hosts.MODEL[:8])} batch {args.batch}; "
          f"{args.reps} reps, load avg at start {load[0]:.1f}")
    print(f"{'setup':10s} {'median ms':>10s} {'best ms':>10s}")
    for s in ("one-host", "two-host"):
        print(f"{s:10s} {med[s]:10.1f} {best[s]:10.1f}")
    ratio = med["two-host"] / med["one-host"]
    print(f"two-host / one-host: {ratio:.2f}x (median), {best['two-host'] / best['one-host']:.2f}x (best)")
    with open(args.json, "w") as f:
        json.dump({"times_ms": times, "median_ms": med, "best_ms": best, "ratio_median": ratio,
                   "ratio_best": best["two-host"] / best["one-host"], "reps": args.reps, "steps": args.steps,
                   "batch": args.batch, "model": two_hosts.MODEL, "loadavg_start": load,
                   "loadavg_end": os.getloadavg(), "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}, f,
                  indent=1)
    print("wrote", args.json)


if __name__ == "__main__":
    main()
