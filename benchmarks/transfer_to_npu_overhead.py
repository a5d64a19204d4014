"""Per-op cost of transfer_to_npu's TorchFunctionMode, on vs off, in one process.

Every torch function and Tensor method goes through the mode's Python
``__torch_function__`` while transfer_to_npu is on; this measures what that
adds. Cases (npu tensors; the "on" side spells devices as a CUDA script does):

- add / relu / view / index on a 1024-element tensor, and a 64x64 matmul;
- creating a tensor: torch.empty(1024, device=...) ("cuda" when on, "npu" when off);
- a move: t.to(...) of a 1024-element cpu tensor ("cuda" vs "npu");
- one training step of a 3-layer MLP (width 256, batch 32: forward, backward, SGD).

Repetitions are interleaved (off, empty mode, on, ...); median and best of the
repetitions are reported, with the added microseconds per op and the ratio. The
"empty mode" column is a TorchFunctionMode that only calls the function: the
floor any TorchFunctionMode-based redirect pays.
One torch thread. Prints a table and writes JSON.

    python benchmarks/transfer_to_npu_overhead.py [--reps 7] [--json benchmarks/results/transfer_to_npu_overhead.json]
"""
import argparse
import json
import os
import statistics
import time

import torch
import torch.nn as nn
from torch.overrides import TorchFunctionMode

import npudist  # noqa: F401  (registers npu when torch's backend autoload is off)
from npudist.compat import transfer


class _EmptyMode(TorchFunctionMode):
    def __torch_function__(self, func, types, args=(), kwargs=None):
        return func(*args, **(kwargs or {}))


def _cases(dev):
    a = torch.randn(1024, device="npu")
    b = torch.randn(1024, device="npu")
    m = torch.randn(64, 64, device="npu")
    idx = torch.arange(0, 1024, 4, device="npu")
    host = torch.randn(1024)
    torch.manual_seed(0)
    mlp = nn.Sequential(nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 10)).to("npu")
    opt = torch.optim.SGD(mlp.parameters(), lr=0.01)
    x = torch.randn(32, 256, device="npu")

    def step():
        loss = mlp(x).square().mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    return {
        "add (1024)": (lambda: a + b, 2000),
        "relu (1024)": (lambda: a.relu(), 2000),
        "view (1024)": (lambda: a.view(32, 32), 2000),
        "index (1024)": (lambda: a[idx], 1000),
        "matmul 64x64": (lambda: m @ m, 1000),
        "empty(device=...)": (lambda: torch.empty(1024, device=dev), 2000),
        "cpu tensor .to(device)": (lambda: host.to(dev), 1000),
        "MLP train step": (step, 50),
    }


def _time(fn, n):
    for _ in range(max(3, n // 20)):
        fn()
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - t0) / n * 1e6


def main():
    ap = argparse.ArgumentParser(description="transfer_to_npu per-op overhead (on vs off)")
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--json", default=os.path.join(os.path.dirname(__file__), "results",
                                                   "transfer_to_npu_overhead.json"))
    args = ap.parse_args()
    torch.set_num_threads(1)
    off_cases, samples = _cases("npu"), {}
    transfer.enable()
    on_cases = _cases("cuda")
    transfer.disable()
    for _ in range(args.reps):
        for name in off_cases:
            fn_off, n = off_cases[name]
            samples.setdefault(name, {"off": [], "empty": [], "on": []})["off"].append(_time(fn_off, n))
            with _EmptyMode():
                samples[name]["empty"].append(_time(fn_off, n))
            transfer.enable()
            try:
                samples[name]["on"].append(_time(on_cases[name][0], n))
            finally:
                transfer.disable()
    rows = []
    print(f"transfer_to_npu overhead, {args.reps} interleaved repetitions, 1 torch thread (shared, loaded machine)")
    print(f"{'op':26s} {'off med us':>11s} {'empty mode':>11s} {'on med us':>10s} {'added us':>9s} "
          f"{'on/off':>7s} {'off best':>9s} {'on best':>8s}")
    for name, s in samples.items():
        off_m, on_m = statistics.median(s["off"]), statistics.median(s["on"])
        empty_m = statistics.median(s["empty"])
        row = {"op": name, "off_median_us": off_m, "empty_mode_median_us": empty_m, "on_median_us": on_m,
               "added_us": on_m - off_m,
               "ratio": on_m / off_m, "off_best_us": min(s["off"]), "on_best_us": min(s["on"])}
        rows.append(row)
        print(f"{name:26s} {off_m:11.2f} {empty_m:11.2f} {on_m:10.2f} {on_m - off_m:9.2f} {on_m / off_m:7.2f} "
              f"{row['off_best_us']:9.2f} {row['on_best_us']:8.2f}")
    os.makedirs(os.path.dirname(args.json), exist_ok=True)
    with open(args.json, "w") as f:
        json.dump({"reps": args.reps, "rows": rows, "torch": torch.__version__}, f, indent=2)
    print(f"\nwrote {args.json}")


if __name__ == "__main__":
    main()
