"""npu graph capture/replay vs eager npu, in one process (docs/graph.md).

(1) A function of 200 small elementwise ops on 1 Ki-element fp32 tensors:
    eager npu time / replay time. Target >= 3x.
(2) A GPT decoder (GPT of benchmarks/device_overhead.py's shape with
    d_model 256, 4 heads, 4 layers, seq 64, batch 1) forward + backward:
    eager npu / replay. Target >= 1.5x.

Repetitions alternate eager and replay; median and best of --reps
repetitions are reported (the machine may be loaded: ratios matter).

(2b) The same GPT forward + backward through torch.compile(backend="npugraphs") (Inductor's
    fused kernels replayed through npu graphs): eager npu / npugraphs (report).
(2c) Where the time goes: torch.profiler on the eager cpu forward + backward (the same CPU
    kernels npu runs): the share of matmul kernels (mm, addmm, bmm) in the step, and the bound
    it puts on any replay of the same kernels: eager / matmul time (report).

(3) The flagship step (examples/train_gpt.py, 2 ranks under npurun, fp32, default sizes:
    d_model 256, 4 layers, seq 64, batch 8): --replicate (eager) vs --graphs, ms/step of the
    last logging window (report; skipped with --no-flagship).

    python benchmarks/graph.py [--reps 7] [--no-flagship] [--json benchmarks/results/graph.json]
"""
import argparse
import json
import os
import re
import statistics
import sys
import time

import torch
import torch.nn as nn

import npudist  # noqa: F401  (registers npu when torch's backend autoload is off)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _models import GPT
from _timing import timed


def elementwise_fn(x):
    # 200 elementwise ops: 50 rounds of mul, add, sin, relu-like clamp.
    for _i in range(50):
        x = x * 1.0001
        x = x + 0.001
        x = torch.sin(x)
        x = x.clamp(-1.0, 1.0)
    return x


def capture(fn):
    s = torch.npu.Stream()
    s.wait_stream(torch.npu.current_stream())
    with torch.npu.stream(s):
        for _ in range(2):
            fn()
    torch.npu.current_stream().wait_stream(s)
    g = torch.npu.NPUGraph()
    with torch.npu.graph(g):
        out = fn()
    return g, out


def bench_case(name, eager, g, check, iters, reps):
    eager_t, replay_t = [], []
    for _ in range(reps):
        eager_t.append(timed(eager, iters))
        replay_t.append(timed(g.replay, iters))
    check()
    r = {
        "case": name,
        "eager_ms_median": statistics.median(eager_t) * 1e3,
        "replay_ms_median": statistics.median(replay_t) * 1e3,
        "eager_ms_best": min(eager_t) * 1e3,
        "replay_ms_best": min(replay_t) * 1e3,
    }
    r["speedup_median"] = r["eager_ms_median"] / r["replay_ms_median"]
    r["speedup_best"] = r["eager_ms_best"] / r["replay_ms_best"]
    return r


def flagship(mode, steps=60, window=20):
    """ms/step of the last logging window of train_gpt.py --<mode> on 2 ranks."""
    import tempfile

    from npudist.testing.npurun import run_npurun

    with tempfile.TemporaryDirectory() as d:
        p = run_npurun(["--nproc", "2", "examples/train_gpt.py", f"--{mode}", "--mp", "fp32", "--steps", steps,
                        "--log-every", window, "--ckpt-every", "0", "--sample-len", "0", "--no-resume",
                        "--ckpt-dir", d, "--max-bytes", "2000000"], timeout=1200)
    if p.returncode != 0:
        raise RuntimeError(f"train_gpt --{mode} failed:\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}")
    ms = re.findall(r"([\d.]+) ms/step", p.stdout + p.stderr)
    return float(ms[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--no-flagship", action="store_true", help="skip the 2-rank train_gpt comparison")
    ap.add_argument("--json", default=os.path.join(os.path.dirname(__file__), "results", "graph.json"))
    args = ap.parse_args()
    torch.set_num_threads(1)
    rows = []

    # (1) elementwise
    x = torch.randn(1024, device="npu")
    g, out = capture(lambda: elementwise_fn(x))

    def check_elementwise():
        g.replay()
        torch.testing.assert_close(out.cpu(), elementwise_fn(x.cpu()))

    rows.append(bench_case("200 elementwise ops, 1Ki fp32", lambda: elementwise_fn(x), g, check_elementwise,
                           iters=20, reps=args.reps))

    # (2) GPT decoder forward + backward
    torch.manual_seed(0)
    model = GPT(seq=64).npu()
    idx = torch.randint(0, 256, (1, 64)).npu()
    tgt = torch.randint(0, 256, (1, 64)).npu()

    def fwd_bwd():
        logits = model(idx)
        loss = nn.functional.cross_entropy(logits.reshape(-1, 256), tgt.reshape(-1))
        loss.backward()
        return loss

    def eager_step():
        for p in model.parameters():
            p.grad = None
        return fwd_bwd()

    eager_step()
    for p in model.parameters():
        p.grad = None
    g2, loss = capture(fwd_bwd)
    grads = [p.grad for p in model.parameters()]

    def check_gpt():
        g2.replay()
        got = loss.item()
        want = eager_step().item()
        assert abs(got - want) <= 1e-5 * abs(want), (got, want)
        for p, gr in zip(model.parameters(), grads):
            p.grad = gr  # the graph's gradient buffers again

    # Eager side sets grads to None each step; the graph writes its own buffers.
    def eager_fb():
        saved = [p.grad for p in model.parameters()]
        eager_step()
        for p, gr in zip(model.parameters(), saved):
            p.grad = gr

    rows.append(bench_case("GPT decoder fwd+bwd (d256, 4 layers, seq 64, batch 1)", eager_fb, g2, check_gpt,
                           iters=3, reps=args.reps))

    # (2b) torch.compile(backend="npugraphs")
    from torch._dynamo.utils import counters

    model_c = GPT(seq=64).npu()
    model_c.load_state_dict(model.state_dict())
    compiled = torch.compile(model_c, backend="npugraphs")

    def npugraphs_step():
        for p in model_c.parameters():
            p.grad = None
        loss = nn.functional.cross_entropy(compiled(idx).reshape(-1, 256), tgt.reshape(-1))
        loss.backward()
        return loss

    t0 = time.perf_counter()
    for _ in range(3):  # compile, warm-up, capture
        npugraphs_step()
    compile_s = time.perf_counter() - t0

    class _Step:
        replay = staticmethod(npugraphs_step)

    def check_npugraphs():
        got = npugraphs_step().item()
        want = eager_step().item()
        assert abs(got - want) <= 1e-4 * abs(want), (got, want)

    rows.append(bench_case("GPT fwd+bwd, torch.compile(backend='npugraphs')", eager_fb, _Step, check_npugraphs,
                           iters=3, reps=args.reps))
    rows[-1]["compile_s"] = compile_s
    rows[-1]["npugraphs_counters"] = dict(counters["npugraphs"])

    # (2c) matmul share of the eager step (cpu: the same kernels, no npu layer)
    from torch.profiler import ProfilerActivity, profile

    torch.manual_seed(0)
    model_cpu = GPT(seq=64)
    model_cpu.load_state_dict({k: v.cpu() for k, v in model.state_dict().items()})
    idx_c, tgt_c = idx.cpu(), tgt.cpu()

    def cpu_step():
        for p in model_cpu.parameters():
            p.grad = None
        nn.functional.cross_entropy(model_cpu(idx_c).reshape(-1, 256), tgt_c.reshape(-1)).backward()

    for _ in range(2):
        cpu_step()
    n_prof = 5
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        t0 = time.perf_counter()
        for _ in range(n_prof):
            cpu_step()
        wall_ms = (time.perf_counter() - t0) / n_prof * 1e3
    self_ms = {e.key: e.self_cpu_time_total / n_prof / 1e3 for e in prof.key_averages()}
    matmul_ms = sum(self_ms.get(k, 0.0) for k in ("aten::mm", "aten::addmm", "aten::bmm"))
    profile_row = {"eager_cpu_ms_profiled": wall_ms, "matmul_ms": matmul_ms, "matmul_share": matmul_ms / wall_ms,
                   "bound_eager_over_matmul": wall_ms / matmul_ms,
                   "top_self_ms": dict(sorted(self_ms.items(), key=lambda kv: -kv[1])[:10])}

    targets = [3.0, 1.5, None]
    print(f"{'case':<55} {'eager ms':>10} {'replay ms':>10} {'speedup':>8} {'best':>7} {'target':>7}")
    for r, t in zip(rows, targets):
        r["target"] = t
        r["met"] = None if t is None else r["speedup_median"] >= t
        print(f"{r['case']:<55} {r['eager_ms_median']:10.3f} {r['replay_ms_median']:10.3f} "
              f"{r['speedup_median']:7.2f}x {r['speedup_best']:6.2f}x " + (f"{t:6.1f}x" if t else "report"))
    print(f"(median and best of {args.reps} interleaved repetitions; torch threads: 1; npugraphs compile "
          f"{rows[2]['compile_s']:.0f} s, counters {rows[2]['npugraphs_counters']})")
    print(f"eager cpu GPT fwd+bwd under the profiler: {profile_row['eager_cpu_ms_profiled']:.2f} ms, of which "
          f"mm/addmm/bmm {profile_row['matmul_ms']:.2f} ms ({profile_row['matmul_share']:.0%}): a replay of the "
          f"same kernels is at most {profile_row['bound_eager_over_matmul']:.2f}x faster than eager")
    flag = None
    if not args.no_flagship:
        eager_ms, graph_ms = [], []
        for _ in range(2):  # alternated
            eager_ms.append(flagship("replicate"))
            graph_ms.append(flagship("graphs"))
        flag = {"eager_ms_per_step": eager_ms, "graphs_ms_per_step": graph_ms,
                "speedup_median": statistics.median(eager_ms) / statistics.median(graph_ms)}
        print(f"flagship train_gpt step, 2 ranks: eager {statistics.median(eager_ms):.1f} ms/step, "
              f"--graphs {statistics.median(graph_ms):.1f} ms/step ({flag['speedup_median']:.2f}x; runs {eager_ms} / "
              f"{graph_ms})")
    os.makedirs(os.path.dirname(args.json), exist_ok=True)
    with open(args.json, "w") as f:
        json.dump({"rows": rows, "profile": profile_row, "flagship": flag, "reps": args.reps, "torch": torch.__version__}, f, indent=2)
    print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
