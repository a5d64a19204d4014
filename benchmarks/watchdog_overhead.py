"""Cost of the hccl watchdog, flight recorder and metrics on a 4 KiB all_reduce.

Issue #9's figure: all_reduce latency of 4 KiB (1024 float32) on 2 ranks with
everything on (watchdog thread and heartbeat monitor, flight recorder at its
default 2000 entries, per-collective counters and histogram, each rank serving
its Prometheus endpoint and being scraped every 0.25 s) against everything off
(NPUDIST_HCCL_WATCHDOG=0, TORCH_HCCL_TRACE_BUFFER_SIZE=0, no endpoint). The two
configurations run as alternating 2-rank jobs (on, off, on, off, ...; a process
cannot switch), each timing --iters synchronous all_reduces after a warm-up.
Prints median and best per-op latency of each and the overhead ratio; writes JSON.

    python benchmarks/watchdog_overhead.py [--reps 7] [--iters 40000]
        [--json benchmarks/results/watchdog_overhead.json]
"""
import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import threading
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def worker(iters):
    import torch
    import torch.distributed as dist

    import npudist  # noqa: F401

    torch.set_num_threads(1)
    rank = int(os.environ["RANK"])
    torch.npu.set_device(rank)
    dist.init_process_group("hccl", device_id=torch.device("npu", rank))
    x = torch.ones(1024, device="npu")
    for _ in range(300):
        dist.all_reduce(x)
    torch.npu.synchronize()
    blocks = []
    per_block = max(1, iters // 10)
    for _ in range(10):
        dist.barrier()
        t0 = time.perf_counter()
        for _ in range(per_block):
            dist.all_reduce(x)
        torch.npu.synchronize()
        blocks.append((time.perf_counter() - t0) / per_block)
    if rank == 0:
        print("RESULT " + json.dumps({"block_us": [b * 1e6 for b in blocks]}), flush=True)
    dist.destroy_process_group()


def scrape_loop(ports, stop, counts):
    while not stop.wait(0.25):
        for p in ports:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{p}/metrics", timeout=2) as r:
                    counts[0] += int(b"npudist_hccl_collectives_completed_total" in r.read())
            except OSError:
                pass


def run_job(on, iters):
    master, metrics = free_port(), free_port()
    base = {k: v for k, v in os.environ.items() if not k.startswith(("NPUDIST_", "TORCH_HCCL_", "HCCL_"))}
    if on:
        base["NPUDIST_METRICS_PORT"] = str(metrics)
    else:
        base.update(NPUDIST_HCCL_WATCHDOG="0", TORCH_HCCL_TRACE_BUFFER_SIZE="0")
    procs = []
    for r in range(2):
        env = dict(base, RANK=str(r), LOCAL_RANK=str(r), WORLD_SIZE="2", MASTER_ADDR="127.0.0.1",
                   MASTER_PORT=str(master), OMP_NUM_THREADS="1")
        procs.append(subprocess.Popen([sys.executable, __file__, "--worker", "--iters", str(iters)], env=env,
                                      stdout=subprocess.PIPE, text=True, cwd=REPO))
    stop, counts = threading.Event(), [0]
    scraper = None
    if on:
        scraper = threading.Thread(target=scrape_loop, args=([metrics, metrics + 1], stop, counts), daemon=True)
        scraper.start()
    outs = [p.communicate(timeout=600)[0] for p in procs]
    stop.set()
    if any(p.returncode for p in procs):
        raise SystemExit(f"a rank failed (exit codes {[p.returncode for p in procs]})")
    line = next(l for l in outs[0].splitlines() if l.startswith("RESULT "))
    return json.loads(line[len("RESULT "):])["block_us"], counts[0]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reps", type=int, default=7, help="jobs per configuration (alternating)")
    ap.add_argument("--iters", type=int, default=40000, help="timed all_reduces per job")
    ap.add_argument("--json", default=os.path.join(HERE, "results", "watchdog_overhead.json"))
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.worker:
        return worker(a.iters)
    jobs = {"on": [], "off": []}
    scrapes = 0
    for rep in range(a.reps):
        for mode in (("on", "off") if rep % 2 == 0 else ("off", "on")):
            blocks, n = run_job(mode == "on", a.iters)
            scrapes += n
            jobs[mode].append(statistics.median(blocks))
            print(f"rep {rep + 1}/{a.reps} {mode:>3}: {jobs[mode][-1]:7.2f} us per all_reduce (median of 10 blocks)",
                  flush=True)
    med = {m: statistics.median(v) for m, v in jobs.items()}
    best = {m: min(v) for m, v in jobs.items()}
    print()
    print(f"4 KiB all_reduce, 2 ranks, {a.reps} jobs each, {a.iters} ops per job; {scrapes} successful scrapes (on)")
    print(f"{'':>22}{'median us':>11}{'best us':>10}")
    print(f"{'watchdog+FR+metrics on':>22}{med['on']:>11.2f}{best['on']:>10.2f}")
    print(f"{'all off':>22}{med['off']:>11.2f}{best['off']:>10.2f}")
    print(f"overhead: median {100 * (med['on'] / med['off'] - 1):+.1f} %, best {100 * (best['on'] / best['off'] - 1):+.1f} %"
          " (target <= 5 %)")
    os.makedirs(os.path.dirname(a.json), exist_ok=True)
    with open(a.json, "w") as f:
        json.dump({"reps": a.reps, "iters": a.iters, "jobs_us": jobs, "median_us": med, "best_us": best,
                   "scrapes": scrapes, "overhead_median": med["on"] / med["off"] - 1,
                   "overhead_best": best["on"] / best["off"] - 1}, f, indent=1)


if __name__ == "__main__":
    main()
