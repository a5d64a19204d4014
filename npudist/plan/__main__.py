"""``python -m npudist.plan SUBCOMMAND`` (docs/plan.md).

    python -m npudist.plan predict TRACE_DIR --hardware HW.toml [--json OUT] [--chrome OUT] [--png OUT]
"""
from __future__ import annotations

import argparse
import json
import sys


def _predict(args) -> int:
    from npudist.plan import hardware, report, trace
    from npudist.plan.predict import predict

    hw = hardware.load(args.hardware)
    traces = trace.load_dir(args.trace_dir)
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
    p.add_argument("--hardware", required=True, metavar="HW",
                   help="hardware file (docs/plan.md) or a shipped name: atlas800t-a2[-910b1|-910b2|-910b3|-910b4]")
    p.add_argument("--json", metavar="OUT", help="write the prediction as JSON")
    p.add_argument("--chrome", metavar="OUT", help="write the predicted timeline as a Chrome/Perfetto trace")
    p.add_argument("--png", metavar="OUT", help="write a stacked-bar chart per rank (needs matplotlib)")
    p.add_argument("--devices-per-node", type=int, default=None,
                   help="ranks per node in the traced job (default: the hardware's devices per node)")
    args = ap.parse_args(argv)
    try:
        return _predict(args)
    except (FileNotFoundError, ValueError, ImportError) as e:
        print(f"npudist.plan {args.cmd}: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
