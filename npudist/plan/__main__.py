"""``python -m npudist.plan SUBCOMMAND`` (docs/plan.md).

    python -m npudist.plan predict TRACE_DIR --hardware HW.toml [--json OUT] [--chrome OUT] [--png OUT]
    python -m npudist.plan capture --hardware HW.toml --nnodes N --nproc-per-node 8 [--out DIR] [--json OUT] train.py ARGS
    python -m npudist.plan model --family llama --hidden H --layers L --heads A --kv-heads G --ffn F --vocab V
        --seq S --tp T --pp P [--vpp-layers K | --num-layer-list N1,N2,...] --dp D --mbs M --gbs B [--sequence-parallel]
        [--recompute none|selective|full] [--distributed-optimizer] --hardware HW --nodes N [--json OUT]
    python -m npudist.plan sweep --family llama --hidden H ... --seq S --gbs B --hardware HW --nodes N [--json OUT]
"""
from __future__ import annotations

import argparse
import json
import sys


def _capture(args) -> int:
    import os

    from npudist.plan import hardware, trace
    from npudist.plan.capture import stage_ranks
    from npudist.plan.script import CaptureError

    hw = hardware.load(args.hardware)  # bad hardware files fail before the (long) capture
    world = args.nnodes * args.nproc_per_node
    if args.nnodes < 1 or args.nproc_per_node < 1:
        raise ValueError(f"--nnodes {args.nnodes} --nproc-per-node {args.nproc_per_node}: give positive numbers")
    if args.tokens is not None and args.tokens < 1:
        raise ValueError(f"--tokens {args.tokens}: give this rank's tokens per step, a positive integer")
    if args.warmup_steps < 0:
        raise ValueError(f"--warmup-steps {args.warmup_steps}: give 0 or more")
    if args.nproc_per_node > hw.devices_per_node:  # one rank per device: more would silently share devices
        raise ValueError(f"--nproc-per-node {args.nproc_per_node} is more than the {hw.devices_per_node} devices per "
                         f"node of {hw.name}: one rank per device (use --nnodes for more ranks)")
    try:
        ranks = [int(r) for r in str(args.ranks).split(",") if r.strip()]
    except ValueError:
        ranks = []
    if not ranks or any(not 0 <= r < world for r in ranks):
        raise ValueError(f"--ranks {args.ranks}: give ranks of the job (0..{world - 1}), comma-separated")
    out = os.path.join(args.out, "steptrace")
    os.makedirs(out, exist_ok=True)
    if len(ranks) > 1:
        _capture_stages(args, ranks)
        traces = trace.load_dir(args.out)
    else:
        from npudist.plan.script import capture_script

        group = [int(r) for r in args.capture_group.split(",")] if args.capture_group else None
        host, _, port = (args.capture_store or "").rpartition(":")
        store = (host, int(port)) if args.capture_store else None
        try:
            step = capture_script(args.script, args.args, world_size=world, rank=ranks[0],
                                  nproc_per_node=args.nproc_per_node, warmup_steps=args.warmup_steps,
                                  boundary=args.step_boundary, tokens=args.tokens, store=store, pipeline_ranks=group)
        except Exception as e:
            _claim_first_failure(store, ranks[0])
            if isinstance(e, CaptureError):
                raise
            raise _script_error(args.script, e) from None
        # the ranks doing the traced rank's work: all, or its pipeline stage's (docs/plan.md)
        step.trace["represents"] = stage_ranks(step.trace)
        trace.save(step.trace, os.path.join(out, f"rank{ranks[0]}.steptrace.json"))
        n = sum(1 for o in step.trace["ops"] if o["kind"] == "kernel")
        c = sum(1 for o in step.trace["ops"] if o["kind"] == "collective")
        print(f"captured rank {ranks[0]} of {world} ({args.nnodes} x {args.nproc_per_node}), step "
              f"{step.trace['steps'][0]} (boundary: {step.boundary}): {n} kernels, {c} collectives; written to {out} "
              f"(it represents {len(step.trace['represents'])} ranks)")
        if step.host_reads:
            print(f"host reads answered with placeholders: {len(step.host_reads)} lines (see the warning)")
        if args.no_predict:
            return 0
        traces = trace.load_dir(args.out)
    missing = sorted(set(range(world)) - set(traces))
    if missing:
        raise ValueError(f"{out}: no trace stands for ranks {missing[:8]}{' ...' if len(missing) > 8 else ''} "
                         f"(a pipeline needs one traced rank per stage: --ranks 0,R1,... one in each stage)")
    args.trace_dir = args.out
    args.devices_per_node = args.nproc_per_node
    args.chrome = args.png = None
    return _report(args, hw, traces)


def _script_error(script: str, e: Exception) -> Exception:
    """An exception the captured script itself raised, as a CaptureError naming the script's line (its traceback
    printed first); an exception with no frame in the script (the capture's own checks) is returned as is.
    Without this a script's ValueError would read as the planner's error, and its RuntimeError end in exit 1."""
    import os
    import traceback

    from npudist.plan.script import CaptureError

    path = os.path.abspath(script)
    frames = [f for f in traceback.extract_tb(e.__traceback__) if os.path.abspath(f.filename) == path]
    if not frames:
        return e
    traceback.print_exception(e)
    return CaptureError(f"{script}:{frames[-1].lineno} raised {type(e).__name__}: {e} (the script's traceback is "
                        f"above); fix the script, or run it under npurun to see it fail there too")


def _capture_stages(args, ranks: list[int]) -> None:
    """``--ranks R0,R1,...``: one capture process per rank, all at once (a pipeline's stages rendezvous for its
    warm-up vote and shape exchange over a real Gloo group: npudist.plan.pipeline_group), sharing a TCPStore this
    process serves. When one fails, the others are stopped and ValueError names the failed rank."""
    import signal
    import subprocess
    import time

    from torch.distributed import TCPStore

    # SIGTERM (a job runner stopping the command) ends the stages too: the finally below runs
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))

    store = TCPStore("127.0.0.1", 0, is_master=True, wait_for_workers=False, use_libuv=True)
    procs = {}
    for r in ranks:
        cmd = [sys.executable, "-m", "npudist.plan", "capture", "--hardware", args.hardware, "--nnodes",
               str(args.nnodes), "--nproc-per-node", str(args.nproc_per_node), "--out", args.out, "--ranks", str(r),
               "--warmup-steps", str(args.warmup_steps), "--step-boundary", args.step_boundary, "--no-predict",
               "--capture-store", f"127.0.0.1:{store.port}", "--capture-group", ",".join(map(str, ranks)),
               *(["--tokens", str(args.tokens)] if args.tokens else []), args.script, *args.args]
        procs[r] = subprocess.Popen(cmd)
    failed, exited = None, {}
    try:
        while procs and failed is None:
            for r, p in list(procs.items()):
                code = p.poll()
                if code is None:
                    continue
                del procs[r]
                exited[r] = code
                if code != 0 and failed is None:
                    failed = (r, code)
            time.sleep(0.2)
    finally:
        for p in procs.values():  # the other stages would wait for the failed one: stop them
            p.terminate()
        for p in procs.values():
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
    if failed is not None:
        r, code = failed
        # the stage that failed first, as it said itself: its exit breaks the others' Gloo connections, and one of
        # those may be the first this loop sees
        if store.check([_FIRST_FAILURE]):
            first = int(store.get(_FIRST_FAILURE))
            if first != r and first in ranks:
                r, code = first, exited.get(first, code)
        raise ValueError(f"the capture of rank {r} (stage {ranks.index(r)} of --ranks {','.join(map(str, ranks))}) "
                         f"failed with exit code {code} (its error is above); the other stages' captures were "
                         f"stopped")


_FIRST_FAILURE = "capture/first_failure"


def _claim_first_failure(store: tuple[str, int] | None, rank: int) -> None:
    """A stage process of ``capture --ranks`` whose capture failed records its rank in the command's store (host,
    port) unless another stage did first (compare_set on an absent key), so the command names the stage that failed
    first. Best effort: without a store (a single-rank capture) or when it is unreachable, nothing is recorded."""
    if store is None:
        return
    from datetime import timedelta

    from torch.distributed import TCPStore

    try:
        TCPStore(*store, is_master=False, timeout=timedelta(seconds=5)).compare_set(_FIRST_FAILURE, "", str(rank))
    except RuntimeError:  # the command is gone: its own checks report the failed stage
        pass


def _predict(args) -> int:
    from npudist.plan import hardware, trace

    hw = hardware.load(args.hardware)
    if args.devices_per_node is not None and args.devices_per_node < 1:
        raise ValueError(f"--devices-per-node {args.devices_per_node}: give a positive integer (the traced job's "
                         f"ranks per node)")
    if args.devices_per_node is not None and args.devices_per_node > hw.devices_per_node:
        raise ValueError(f"--devices-per-node {args.devices_per_node} is more than the {hw.devices_per_node} devices "
                         f"per node of {hw.name}: one rank per device")
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


def _config(args):
    from npudist.plan.llama import LlamaConfig

    unfused = set(filter(None, (args.unfused or "").split(",")))
    if unfused - {"rmsnorm", "swiglu", "rope"}:
        raise ValueError(f"--unfused {args.unfused!r}: name some of rmsnorm, swiglu, rope")
    if args.family != "llama":
        raise ValueError(f"--family {args.family!r}: the only family is 'llama'")
    return LlamaConfig(hidden=args.hidden, layers=args.layers, heads=args.heads,
                       kv_heads=args.heads if args.kv_heads is None else args.kv_heads, ffn=args.ffn, vocab=args.vocab, seq=args.seq,
                       dtype={"bf16": "bfloat16", "fp16": "float16"}[args.dtype],
                       **{f"fused_{k}": k not in unfused for k in ("rmsnorm", "swiglu", "rope")})


def _layer_list(text: str | None) -> tuple[int, ...] | None:
    """``--num-layer-list 7,8,9`` (MindSpeed-LLM's comma-separated layers per stage) as a tuple."""
    if text is None:
        return None
    try:
        return tuple(int(x) for x in text.split(","))
    except ValueError:
        raise ValueError(f"--num-layer-list {text!r}: give comma-separated layer counts, e.g. 7,9") from None


def _model(args) -> int:
    from npudist.plan import hardware
    from npudist.plan.model import Layout, predict_model

    hw = hardware.load(args.hardware)
    cfg = _config(args)
    lay = Layout(tp=args.tp, pp=args.pp, dp=args.dp, mbs=args.mbs, gbs=args.gbs, vpp_layers=args.vpp_layers,
                 sequence_parallel=args.sequence_parallel, recompute=args.recompute,
                 distributed_optimizer=args.distributed_optimizer, overlap_grad_reduce=args.overlap_grad_reduce,
                 overlap_param_gather=args.overlap_param_gather,
                 mc2=not args.no_mc2, num_layer_list=_layer_list(args.num_layer_list))
    r = predict_model(cfg, lay, hw, args.nodes)
    print(f"llama: {r['parameters'] / 1e9:.2f} B parameters; {r['npus']} NPUs of {hw.name} ({args.nodes} nodes); "
          f"tp {lay.tp} pp {lay.pp}{f' vpp_layers {lay.vpp_layers}' if lay.vpp_layers else ''} dp {lay.dp}, "
          f"{r['microbatches']} micro-batches of {lay.mbs}")
    print(f"step time: {r['step_time_s']:.3f} s (pipeline {r['pipeline_s']:.3f} s, bubble "
          f"{r['bubble_fraction'] * 100:.1f} %; data-parallel communication exposed {r['dp_comm_exposed_s']:.3f} s; "
          f"optimizer {r['optimizer_s']:.3f} s)")
    print(f"tokens/s per npu: {r['tokens_per_s_per_npu']:.1f}")
    print(f"MFU: {r['mfu'] * 100:.1f} %")
    for m in r["memory_per_stage"]:
        print(f"stage {m['stage']}: {m['total_gib']:.2f} GiB (parameters, gradients and optimizer "
              f"{m['static_gib']:.2f}; activations of {m['microbatches_in_flight']} micro-batches in flight "
              f"{m['activations_gib']:.2f}; backward transient {m['transient_gib']:.2f})")
    print(f"peak memory: {r['peak_memory_gib']:.2f} GiB (largest over stages); capacity {r['capacity_gib']:.1f} GiB"
          + ("" if r["fits"] else " -- does not fit"))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(r, f, indent=1)
        print(f"wrote {args.json}")
    return 0 if r["fits"] else 3


def _sizes(flag: str, text: str | None) -> list[int] | None:
    """A sweep's ``--tp 1,2,4`` as positive integers (None when the flag is not given)."""
    if text is None:
        return None
    try:
        sizes = [int(x) for x in text.split(",")]
    except ValueError:
        sizes = []
    if not sizes or min(sizes) < 1:
        raise ValueError(f"{flag} {text!r}: give comma-separated positive integers, e.g. 1,2,4")
    return sizes


def _sweep(args) -> int:
    from npudist.plan import hardware
    from npudist.plan.sweep import format_rows, sweep

    hw = hardware.load(args.hardware)
    cfg = _config(args)
    from npudist.plan.model import RECOMPUTE

    recomputes = tuple(x.strip() for x in args.recompute.split(","))
    if not recomputes or set(recomputes) - set(RECOMPUTE):
        raise ValueError(f"--recompute {args.recompute!r}: comma-separated modes among {', '.join(RECOMPUTE)}")
    for flag, v in (("--gbs", args.gbs), ("--nodes", args.nodes)):
        if v < 1:
            raise ValueError(f"{flag} {v}: give a positive integer")
    if args.top is not None and args.top < 1:
        raise ValueError(f"--top {args.top}: give a positive number of rows (or leave it out for all)")
    rows = sweep(cfg, hw, args.nodes, args.gbs, tps=_sizes("--tp", args.tp), pps=_sizes("--pp", args.pp),
                 mbss=_sizes("--mbs", args.mbs) or (1, 2, 4), recomputes=recomputes, vpp=not args.no_vpp,
                 distributed_optimizer=not args.no_distributed_optimizer)
    print(f"{len(rows)} layouts of {cfg.parameters() / 1e9:.2f} B parameters on {args.nodes} x "
          f"{hw.devices_per_node} NPUs of {hw.name}, global batch {args.gbs} x {cfg.seq} tokens; those that fit first, "
          f"fastest first")
    print(format_rows(rows, args.top))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(rows, f, indent=1)
        print(f"wrote {args.json}")
    return 0


def _model_args(p, sweep: bool) -> None:
    p.add_argument("--family", required=True, help="model family: llama")
    for k, h in (("hidden", "hidden size"), ("layers", "decoder layers"), ("heads", "attention heads"),
                 ("ffn", "SwiGLU intermediate size"), ("vocab", "vocabulary (padded as the job pads it)"),
                 ("seq", "sequence length (tokens)")):
        p.add_argument(f"--{k}", type=int, required=True, help=h)
    p.add_argument("--kv-heads", type=int, default=None, help="key/value heads (grouped-query; default: --heads)")
    p.add_argument("--dtype", choices=("bf16", "fp16"), default="bf16", help="training precision (default bf16)")
    p.add_argument("--unfused", metavar="OPS", help="run these with unfused elementwise ops instead of torch_npu's "
                   "fused kernels: comma-separated rmsnorm, swiglu, rope (default: all fused, as MindSpeed)")
    p.add_argument("--gbs", type=int, required=True, help="global batch (sequences per step)")
    p.add_argument("--hardware", required=True, metavar="HW",
                   help="hardware file or shipped name: atlas800t-a2[-910b1|-910b2|-910b3|-910b4]")
    p.add_argument("--nodes", type=int, required=True, help="nodes of the hardware's devices per node")
    p.add_argument("--json", metavar="OUT", help="write the result as JSON")
    if sweep:
        p.add_argument("--tp", help="TP sizes to try, comma-separated (default: 1,2,4,8 within a node)")
        p.add_argument("--pp", help="PP sizes to try (default: every divisor of --layers)")
        p.add_argument("--mbs", help="micro-batch sizes to try (default 1,2,4)")
        p.add_argument("--recompute", default="none,selective,full", help="recompute modes to try")
        p.add_argument("--no-vpp", action="store_true", help="do not try interleaved virtual stages")
        p.add_argument("--no-distributed-optimizer", action="store_true",
                       help="plain data parallelism (default: Megatron's distributed optimizer when dp > 1)")
        p.add_argument("--top", type=int, default=None, help="print only the fastest K")
        return
    for k in ("tp", "pp", "dp", "mbs"):
        p.add_argument(f"--{k}", type=int, required=True)
    p.add_argument("--vpp-layers", type=int, default=None,
                   help="layers per virtual pipeline stage (interleaved 1F1B; Megatron's --num-layers-per-virtual-pipeline-stage)")
    p.add_argument("--num-layer-list", default=None, metavar="N1,N2,...",
                   help="layers of each pipeline stage (MindSpeed-LLM's --num-layer-list; default layers / pp each)")
    p.add_argument("--sequence-parallel", action="store_true", help="Megatron's sequence parallelism (with --tp > 1)")
    p.add_argument("--recompute", choices=("none", "selective", "full"), default="none")
    p.add_argument("--distributed-optimizer", action="store_true",
                   help="Megatron's distributed optimizer (optimizer state sharded over DP), modelled analytically")
    p.add_argument("--no-mc2", action="store_true",
                   help="TP collectives not fused with their GEMMs (the hardware's tp_comm_overlap does not apply)")
    p.add_argument("--overlap-grad-reduce", action="store_true",
                   help="the DP gradient reduction overlaps the backward (Megatron's --overlap-grad-reduce)")
    p.add_argument("--overlap-param-gather", action="store_true",
                   help="with --distributed-optimizer: the parameters' all_gather overlaps the next forward "
                        "(Megatron's --overlap-param-gather)")


def main(argv=None) -> int:
    """The CLI; returns the exit code (predict, model: 0, or 3 when the job does not fit; 2 for bad input)."""
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
    c = sub.add_parser("capture", help="trace one step of an npurun script at its logical world size, then predict")
    c.add_argument("--hardware", required=True, metavar="HW.toml", help="hardware file (docs/plan.md)")
    c.add_argument("--nnodes", type=int, required=True, help="nodes of the logical job")
    c.add_argument("--nproc-per-node", type=int, default=8, help="ranks (npus) per node (default 8)")
    c.add_argument("--out", default="plan_capture", metavar="DIR", help="step traces go to DIR/steptrace/ "
                   "(default ./plan_capture)")
    c.add_argument("--json", metavar="OUT", help="write the prediction as JSON")
    c.add_argument("--ranks", "--rank", default="0", help="the ranks to trace, comma-separated (default 0; one per "
                   "pipeline stage; the others are expanded from them, docs/plan.md)")
    c.add_argument("--no-predict", action="store_true", help="only write the trace (capture stages separately, "
                   "then python -m npudist.plan predict DIR)")
    c.add_argument("--warmup-steps", type=int, default=1, help="steps run before the recorded one (default 1)")
    c.add_argument("--step-boundary", choices=("auto", "optimizer", "profiler"), default="auto",
                   help="what ends a step: npudist.profiler.step() when the script calls it, else optimizer.step()")
    c.add_argument("--tokens", type=int, default=None, help="this rank's tokens per step (default: what the script "
                   "passes to npudist.profiler.step(tokens=...))")
    # internal: a stage of a multi-stage capture (started by _capture_stages)
    c.add_argument("--capture-store", default=None, help=argparse.SUPPRESS)
    c.add_argument("--capture-group", default=None, help=argparse.SUPPRESS)
    c.add_argument("script", help="the training script, as given to npurun")
    c.add_argument("args", nargs=argparse.REMAINDER, help="its arguments")
    m = sub.add_parser("model", help="predict a built-in model family's training step for a layout")
    _model_args(m, sweep=False)
    sw = sub.add_parser("sweep", help="rank the layouts of a built-in model on a cluster, fastest first")
    _model_args(sw, sweep=True)
    args = ap.parse_args(argv)
    if args.cmd == "capture" and args.nproc_per_node > 0:
        import os
        # the simulated npus the capture sees: one node's worth, so set_device(LOCAL_RANK) works without devices
        os.environ["NPUDIST_DEVICE_COUNT"] = str(args.nproc_per_node)
    from npudist.plan.script import CaptureError
    try:
        return {"predict": _predict, "capture": _capture, "model": _model, "sweep": _sweep}[args.cmd](args)
    except (FileNotFoundError, ValueError, ImportError, CaptureError) as e:
        who = f" (rank {args.ranks})" if getattr(args, "capture_group", None) else ""
        print(f"npudist.plan {args.cmd}{who}: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
