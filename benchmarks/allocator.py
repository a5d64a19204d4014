"""Caching-allocator benchmarks, side by side in one run.

(1) torch.empty(n, device="npu") then release, vs the same on cpu, for
    n = 512 B, 64 KiB, 4 MiB (target npu/cpu <= 1.2), plus the npu
    allocator's own allocate+free time in ns (measured inside the extension).
(2) Fragmentation: the allocation trace of a real transformer training loop
    on npu (6 layers, d_model 512, 8 heads, batch 8, AdamW, --steps steps,
    sequence length drawn each step from 64, 128, ..., 1024) is recorded with
    torch.npu.memory._record_memory_history, then replayed in fresh processes
    with the default allocator and with expandable_segments:True; reports
    peak reserved / peak allocated for each (target <= 1.10 expandable).

    python benchmarks/allocator.py [--steps 200] [--reps 7] [--trace benchmarks/results/alloc_trace.json]

The recorded trace is kept (--trace); --reuse-trace replays it without
recording again.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

# Sequence 1024 keeps ~3 GiB of activations alive: more than the default share of a small host.
os.environ.setdefault("NPUDIST_DEVICE_MEMORY", "12GiB")

import torch
import torch.nn as nn
import torch.nn.functional as F
from _models import DecoderBlock

HERE = os.path.dirname(os.path.abspath(__file__))


def bench_latency(reps, calls):
    from npudist import _C

    rows = []
    for n in (512, 64 << 10, 4 << 20):
        res = {"cpu": [], "npu": []}
        for dev in res:  # warm the caches
            for _ in range(100):
                torch.empty(n, dtype=torch.uint8, device=dev)
        for _ in range(reps):
            for dev in ("cpu", "npu"):
                t0 = time.perf_counter()
                for _ in range(calls):
                    torch.empty(n, dtype=torch.uint8, device=dev)
                res[dev].append((time.perf_counter() - t0) / calls * 1e9)
        raw = statistics.median(_C._bench_allocator(n, 100000) for _ in range(reps))
        rows.append({"bytes": n, "cpu_ns": statistics.median(res["cpu"]), "npu_ns": statistics.median(res["npu"]),
                     "ratio": statistics.median(res["npu"]) / statistics.median(res["cpu"]),
                     "allocator_alloc_free_ns": raw})
    return rows


def record_trace(steps, path):
    """Runs the training loop on npu with history on; writes [(action, id, size)] as JSON."""
    torch.manual_seed(0)
    d, layers, heads, batch, max_len = 512, 6, 8, 8, 1024
    emb, pos = nn.Embedding(256, d).to("npu"), nn.Embedding(max_len, d).to("npu")
    blocks = nn.ModuleList(DecoderBlock(d, heads) for _ in range(layers)).to("npu")
    head = nn.Linear(d, 256).to("npu")
    params = [*emb.parameters(), *pos.parameters(), *blocks.parameters(), *head.parameters()]
    opt = torch.optim.AdamW(params, lr=1e-4)
    lengths = [64, 128, 256, 512, 1024]
    gen = torch.Generator().manual_seed(0)
    torch.npu.memory._record_memory_history(enabled="all", context=None, max_entries=10**8)
    start = time.time()
    for step in range(steps):
        seq = lengths[int(torch.randint(0, len(lengths), (1,), generator=gen))]
        idx = torch.randint(0, 256, (batch, seq + 1), generator=gen).to("npu")
        x = emb(idx[:, :-1]) + pos(torch.arange(seq, device="npu"))
        for blk in blocks:
            x = blk(x)
        loss = F.cross_entropy(head(x).flatten(0, 1), idx[:, 1:].flatten())
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if step % 10 == 0:
            print(f"  recording: step {step}/{steps} seq {seq} loss {loss.item():.3f} "
                  f"({time.time() - start:.0f}s)", flush=True)
    snap = torch.npu.memory._snapshot()
    torch.npu.memory._record_memory_history(enabled=None)
    events, ids, next_id = [], {}, 0
    for e in snap["device_traces"][0]:
        if e["action"] == "alloc":
            ids[e["addr"]] = next_id
            events.append(("a", next_id, e["size"]))
            next_id += 1
        elif e["action"] == "free_completed" and e["addr"] in ids:
            events.append(("f", ids.pop(e["addr"]), e["size"]))
    with open(path, "w") as f:
        json.dump({"steps": steps, "events": events}, f)
    return len(events)


REPLAY = """
import json, sys, torch
events = json.load(open(sys.argv[1]))["events"]
live = {}
for op, i, size in events:
    if op == "a":
        live[i] = torch.empty(size, dtype=torch.uint8, device="npu")
    else:
        live.pop(i, None)
print(torch.npu.max_memory_reserved(), torch.npu.max_memory_allocated())
"""


def replay(path, conf):
    env = dict(os.environ, PYTORCH_NPU_ALLOC_CONF=conf)
    out = subprocess.run([sys.executable, "-c", REPLAY, path], env=env, capture_output=True, text=True, check=True)
    reserved, allocated = map(int, out.stdout.split())
    return {"conf": conf or "(default)", "peak_reserved": reserved, "peak_allocated": allocated,
            "ratio": reserved / allocated}


def main():
    ap = argparse.ArgumentParser(description="npu caching allocator: latency vs cpu, fragmentation replay")
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--calls", type=int, default=20000)
    ap.add_argument("--trace", default=os.path.join(HERE, "results", "alloc_trace.json"))
    ap.add_argument("--reuse-trace", action="store_true")
    ap.add_argument("--json", default=os.path.join(HERE, "results", "allocator.json"))
    ap.add_argument("--skip-latency", action="store_true")
    args = ap.parse_args()
    import npudist  # noqa: F401  (registers npu when torch's backend autoload is off)

    torch.set_num_threads(1)
    os.makedirs(os.path.dirname(args.json), exist_ok=True)
    result = {"torch": torch.__version__}
    if not args.skip_latency:
        rows = bench_latency(args.reps, args.calls)
        result["latency"] = rows
        print(f"\n(1) torch.empty(n) + release, median of {args.reps} interleaved reps x {args.calls} calls")
        print(f"{'bytes':>10}{'cpu ns':>10}{'npu ns':>10}{'npu/cpu':>9}{'allocator alloc+free ns':>25}")
        for r in rows:
            print(f"{r['bytes']:10d}{r['cpu_ns']:10.0f}{r['npu_ns']:10.0f}{r['ratio']:9.2f}"
                  f"{r['allocator_alloc_free_ns']:25.0f}")
    if not (args.reuse_trace and os.path.exists(args.trace)):
        torch.set_num_threads(os.cpu_count() or 1)
        print(f"\n(2) recording the allocation trace of {args.steps} training steps ...", flush=True)
        n = record_trace(args.steps, args.trace)
        print(f"  {n} events -> {args.trace}")
    frag = [replay(args.trace, ""), replay(args.trace, "expandable_segments:True")]
    result["fragmentation"] = frag
    print(f"\n(2) fragmentation: replay of {args.trace}")
    print(f"{'PYTORCH_NPU_ALLOC_CONF':>28}{'peak reserved':>16}{'peak allocated':>16}{'reserved/alloc':>16}")
    for r in frag:
        print(f"{r['conf']:>28}{r['peak_reserved'] / 2**20:13.1f} MiB{r['peak_allocated'] / 2**20:13.1f} MiB"
              f"{r['ratio']:16.3f}")
    with open(args.json, "w") as f:
        json.dump(result, f, indent=2)
    print(f"\nwrote {args.json}")


if __name__ == "__main__":
    main()
