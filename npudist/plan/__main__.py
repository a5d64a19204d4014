"""``python -m npudist.plan SUBCOMMAND`` (docs/plan.md).

    python -m npudist.plan predict TRACE_DIR --hardware HW.toml [--json OUT] [--chrome OUT] [--png OUT]
    python -m npudist.plan capture --hardware HW.toml --nnodes N --nproc-per-node 8 [--out DIR] [--json OUT] train.py ARGS
"""
from __future__ import annotations

import argparse
import json
import sys


def _capture(args) -> int:
    import os

    from npudist.plan import hardware, trace
    from npudist.plan.capture import expand_layout

    hw = hardware.load(args.hardware)  # bad hardware files fail before the (long) capture
    world = args.nnodes * args.nproc_per_node
    if args.nnodes < 1 or args.nproc_per_node < 1:
        raise ValueError(f"--nnodes {args.nnodes} --nproc-per-node {args.nproc_per_node}: give positive numbers")
    from npudist.plan.script import capture_script

    step = capture_script(args.script, args.args, world_size=world, rank=args.rank,
                          nproc_per_node=args.nproc_per_node, warmup_steps=args.warmup_steps,
                          boundary=args.step_boundary, tokens=args.tokens)
    out = os.path.join(args.out, "steptrace")
    os.makedirs(out, exist_ok=True)
    step.trace["represents"] = list(range(world))  # every rank does the traced rank's work (docs/plan.md)
    trace.save(step.trace, os.path.join(out, f"rank{args.rank}.steptrace.json"))
    traces = expand_layout(step.trace, range(world))
    n = sum(1 for o in step.trace["ops"] if o["kind"] == "kernel")
    c = sum(1 for o in step.trace["ops"] if o["kind"] == "collective")
    print(f"captured rank {args.rank} of {world} ({args.nnodes} x {args.nproc_per_node}), step {step.trace['steps'][0]} "
          f"(boundary: {step.boundary}): {n} kernels, {c} collectives; written to {out} (it represents all {world} ranks)")
    if step.host_reads:
        print(f"host reads answered with placeholders: {len(step.host_reads)} lines (see the warning)")
    args.trace_dir = args.out
    args.devices_per_node = args.nproc_per_node
    args.chrome = args.png = None
    return _report(args, hw, traces)


def _predict(args) -> int:
    from npudist.plan import hardware, trace

    hw = hardware.load(args.hardware)
    return _report(args, hw, trace.load_dir(args.trace_dir))


def _report(args, hw, traces) -> int:
    from npudist.plan import report
    from npudist.plan.predict import predict

    p = predict(traces, hw, args.devices_per_node)
    print(f"hardware: {hw.name} ({args.hardware}); ranks: {len(traces)}; steps per rank: "
          f"{len({r['Step'] for r in p.rows})}")
    print(report.format_table(p.rows))
    print(f"step time: {p.step_time_s * 1e3:.3f} ms (predicted)"
          + (f"; recorded: {p.measured_step_time_s * 1e3:.3f} ms (with the profiler on)"
             if p.measured_step_time_s else ""))
    if p.tokens_per_s_per_npu is not None:
        print(f"tokens/s per npu: {p.tokens_per_s_per_npu:.1f}")
    print(f"MFU: {p.mfu * 100:.2f} % of the {p.mfu_dtype} peak")
    print(f"peak memory: {p.peak_memory_gib:.3f} GiB (largest over ranks); capacity {hw.capacity_bytes / 2**30:.3f} GiB")
    for line in p.not_fitting():
        print(line)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(p.to_json(), f, indent=1)
        print(f"wrote {args.json}")
    if args.chrome:
        report.chrome_trace(p.timelines, args.chrome)
        print(f"wrote {args.chrome} (open in https://ui.perfetto.dev)")
    if args.png:
        report.bar_chart(p.rows, args.png, f"predicted step on {hw.name}")
        print(f"wrote {args.png}")
    return 0 if p.fits else 3


def main(argv=None) -> int:
    """The CLI; returns the exit code (predict: 0, or 3 when the job does not fit; 2 for bad input)."""
    ap = argparse.ArgumentParser(prog="python -m npudist.plan", description="What the job will do on a real cluster.")
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("predict", help="predict step time, overlap and memory from step traces")
    p.add_argument("trace_dir", metavar="TRACE_DIR", help="npurun --profile DIR (its steptrace/ folder of rank<R>.steptrace.json) or such a folder")
    p.add_argument("--hardware", required=True, metavar="HW.toml", help="hardware file (docs/plan.md)")
    p.add_argument("--json", metavar="OUT", help="write the prediction as JSON")
    p.add_argument("--chrome", metavar="OUT", help="write the predicted timeline as a Chrome/Perfetto trace")
    p.add_argument("--png", metavar="OUT", help="write a stacked-bar chart per rank (needs matplotlib)")
    p.add_argument("--devices-per-node", type=int, default=None,
                   help="ranks per node in the traced job (default: the hardware's devices per node)")
    c = sub.add_parser("capture", help="trace one step of an npurun script at its logical world size, then predict")
    c.add_argument("--hardware", required=True, metavar="HW.toml", help="hardware file (docs/plan.md)")
    c.add_argument("--nnodes", type=int, required=True, help="nodes of the logical job")
    c.add_argument("--nproc-per-node", type=int, default=8, help="ranks (npus) per node (default 8)")
    c.add_argument("--out", default="plan_capture", metavar="DIR", help="step traces go to DIR/steptrace/ "
                   "(default ./plan_capture)")
    c.add_argument("--json", metavar="OUT", help="write the prediction as JSON")
    c.add_argument("--rank", type=int, default=0, help="the rank to trace (default 0; the others are expanded "
                   "from it, docs/plan.md)")
    c.add_argument("--warmup-steps", type=int, default=1, help="steps run before the recorded one (default 1)")
    c.add_argument("--step-boundary", choices=("auto", "optimizer", "profiler"), default="auto",
                   help="what ends a step: npudist.profiler.step() when the script calls it, else optimizer.step()")
    c.add_argument("--tokens", type=int, default=None, help="this rank's tokens per step (default: what the script "
                   "passes to npudist.profiler.step(tokens=...))")
    c.add_argument("script", help="the training script, as given to npurun")
    c.add_argument("args", nargs=argparse.REMAINDER, help="its arguments")
    args = ap.parse_args(argv)
    if args.cmd == "capture" and args.nproc_per_node > 0:
        import os
        # the simulated npus the capture sees: one node's worth, so set_device(LOCAL_RANK) works without devices
        os.environ["NPUDIST_DEVICE_COUNT"] = str(args.nproc_per_node)
    from npudist.plan.script import CaptureError
    try:
        return _capture(args) if args.cmd == "capture" else _predict(args)
    except (FileNotFoundError, ValueError, ImportError, CaptureError) as e:
        print(f"npudist.plan {args.cmd}: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
