"""DTensor op sweep: PyTorch's OpInfo database run on DTensors over an npu mesh and a cpu mesh.

PyTorch's own test_dtensor_ops.py is not in the wheel; this rebuilds it from
the pieces that are (op_db, DTensorConverter). For every op (float32, forward,
as test_dtensor_ops does) and each of its first ``max_samples`` sample inputs,
the op runs once on plain tensors (the reference) and then on DTensors for up
to ``max_combos`` placement combinations of its tensor arguments (Replicate
or an even Shard, DTensorConverter's choices); each result's full_tensor()
must equal the reference. This is done twice in the same processes: on an npu
DeviceMesh (hccl) and on a cpu DeviceMesh (gloo), so the two pass counts are
comparable. Random ops compare shapes and dtypes only
(npudist.testing.opinfo.values_are_random).

Status per (op, mesh): "pass" (every sample/combination matched), "fail"
(values differ), "error" (DTensor raised where plain tensors did not; the
reason names the exception), "skip" (no sample ran on plain tensors).

Run it through ``python -m npudist.testing.dtensor_coverage`` (the report) or
``run_sweep()``; the rank processes run ``python -m npudist.testing.dtensor_sweep --worker``.
"""
from __future__ import annotations

import argparse
import datetime
import itertools
import json
import os
import sys
import time
import traceback
import zlib

from npudist import _env

STATUSES = ("pass", "fail", "error", "skip")
# Output values compared with the reference after full_tensor(): float32 reductions over shards
# sum in another order, hence PyTorch's float32 defaults loosened a little (test_dtensor_ops does the same).
RTOL, ATOL = 1e-4, 1e-5


def select_ops(fraction=1.0, names=None):
    """OpInfos to sweep: `names` (op or op.variant) if given, else a deterministic `fraction` of op_db."""
    import warnings

    warnings.filterwarnings("ignore")
    from torch.testing._internal.common_methods_invocations import op_db

    out = []
    for op in op_db:
        key = f"{op.name}.{op.variant_test_name}"
        if names:
            if op.name in names or key in names or key.rstrip(".") in names:
                out.append(op)
        elif fraction >= 1.0 or zlib.crc32(key.encode()) % 1000 < fraction * 1000:
            out.append(op)
    return out


# ------------------------------------------------------------------ one rank
def _first_line(err):
    text = str(err).strip().splitlines()
    return f"{type(err).__name__}: {text[0][:300] if text else ''}"


def _where(err):
    tb = traceback.extract_tb(err.__traceback__)
    return tb[-1].name if tb else ""


def _to(obj, device):
    import torch

    if isinstance(obj, torch.Tensor):
        return obj.detach().to(device)
    if isinstance(obj, (list, tuple)):
        return type(obj)(_to(o, device) for o in obj)
    if isinstance(obj, dict):
        return {k: _to(v, device) for k, v in obj.items()}
    if isinstance(obj, torch.device) and obj.type == "cpu":
        return torch.device(device)
    return obj


def _combos(converter, max_combos):
    """Up to max_combos placement combinations, spread over DTensorConverter's full product:
    all-Replicate first, then evenly spaced ones (the product grows exponentially)."""
    choices = [converter.gen_sharding_choices_for_arg(a) for a in
               list(converter.flatten_args) + list(converter.flatten_kwargs) if _is_tensor(a)]
    total = 1
    for c in choices:
        total *= len(c)
    if total <= max_combos:
        return list(itertools.product(*choices))
    picks = sorted({round(i * (total - 1) / (max_combos - 1)) for i in range(max_combos)}) if max_combos > 1 else [0]
    out = []
    for index in picks:
        combo = []
        for c in reversed(choices):  # mixed-radix decode, last argument fastest (as itertools.product)
            combo.append(c[index % len(c)])
            index //= len(c)
        out.append(tuple(reversed(combo)))
    return out


def _is_tensor(a):
    import torch

    return isinstance(a, torch.Tensor)


def _convert(converter, combo):
    from torch.utils._pytree import tree_unflatten

    it = iter(combo)
    args = [converter.to_dist_tensor(a, converter.mesh, [next(it)]) if _is_tensor(a) else a
            for a in converter.flatten_args]
    kwargs = [converter.to_dist_tensor(a, converter.mesh, [next(it)]) if _is_tensor(a) else a
              for a in converter.flatten_kwargs]
    return tree_unflatten(args, converter.flatten_args_spec), tree_unflatten(kwargs, converter.flatten_kwargs_spec)


def _full(obj):
    from torch.distributed.tensor import DTensor

    if isinstance(obj, DTensor):
        return obj.full_tensor()
    if isinstance(obj, (list, tuple)):
        return [_full(o) for o in obj]
    return obj


def _compare(ref, got, shapes_only):
    import torch

    from npudist.testing.opinfo import _tensors

    r, g = _tensors(ref), _tensors(got)
    if len(r) != len(g):
        return f"{len(g)} output tensors on DTensors vs {len(r)} on plain tensors"
    for i, (a, b) in enumerate(zip(r, g)):
        if type(b) is not torch.Tensor and not isinstance(b, torch.Tensor):
            return f"output[{i}] is {type(b).__name__}"
        if a.shape != b.shape or a.dtype != b.dtype:
            return f"output[{i}]: DTensor {tuple(b.shape)} {b.dtype} vs plain {tuple(a.shape)} {a.dtype}"
        if a.device != b.device:
            return f"output[{i}] on {b.device}, plain tensor result on {a.device}"
        if shapes_only:
            continue
        try:
            torch.testing.assert_close(b, a, rtol=RTOL, atol=ATOL, equal_nan=True)
        except AssertionError as err:
            return f"output[{i}] differs: {' '.join(str(err).split())[:200]}"
    return None


def run_op(op, mesh, device, max_samples, max_combos):
    """One OpInfo on one mesh; returns a dict(status, reason, where, runs)."""
    import torch
    from torch.testing._internal.distributed._tensor.common_dtensor import DTensorConverter

    from npudist.testing.opinfo import values_are_random

    shapes_only = values_are_random(op)
    torch.manual_seed(0)  # the same samples on every rank
    try:
        samples = list(itertools.islice(op.sample_inputs("cpu", torch.float32, requires_grad=False), max_samples))
    except Exception as err:
        return dict(status="skip", reason=f"sample_inputs failed: {_first_line(err)}", where="", runs=0)
    runs = 0
    for sample in samples:
        args = _to((sample.input, *sample.args), device)
        kwargs = _to(sample.kwargs, device)
        if any(t.layout != torch.strided for t in _tensors_of((args, kwargs))):
            continue
        try:
            torch.manual_seed(0)
            ref = op(*args, **kwargs)
        except Exception:
            continue  # invalid sample on plain tensors as well
        converter = DTensorConverter(mesh, args, kwargs)
        for combo in _combos(converter, max_combos):
            try:
                dargs, dkwargs = _convert(converter, combo)
                torch.manual_seed(0)
                got = _full(op(*dargs, **dkwargs))
            except Exception as err:
                if _env.get_bool("NPUDIST_SWEEP_TRACEBACK", False):  # investigating one op: the whole stack
                    traceback.print_exc()
                return dict(status="error", reason=_first_line(err), where=_where(err), runs=runs,
                            placements=[str(p) for p in combo])
            problem = _compare(ref, got, shapes_only)
            if problem:
                return dict(status="fail", reason=problem, where="", runs=runs, placements=[str(p) for p in combo])
            runs += 1
    if runs == 0:
        return dict(status="skip", reason="no sample ran on plain tensors", where="", runs=0)
    return dict(status="pass", reason="", where="", runs=runs)


def _tensors_of(obj):
    from npudist.testing.opinfo import _tensors

    return _tensors(obj)


def worker(args):
    """Body of one rank: both meshes, every selected op; rank 0 writes the JSON to args.out."""
    import faulthandler

    import torch
    import torch.distributed as dist
    from torch.distributed.device_mesh import init_device_mesh

    import npudist
    import npudist.dtensor  # noqa: F401  (npu fused-op strategies; harmless for aten ops)

    faulthandler.dump_traceback_later(args.hang_s, exit=True)
    torch.set_num_threads(1)
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    torch.npu.set_device(rank % torch.npu.device_count())
    dist.init_process_group("cpu:gloo,npu:hccl", device_id=torch.device("npu", torch.npu.current_device()),
                            timeout=datetime.timedelta(seconds=args.pg_timeout))
    meshes = {"npu": init_device_mesh("npu", (world,)), "cpu": init_device_mesh("cpu", (world,))}
    ops = select_ops(args.fraction, args.ops.split(",") if args.ops else None)
    results, seconds = [], {"npu": 0.0, "cpu": 0.0}
    for op in ops:
        entry = {"name": op.name, "variant": op.variant_test_name}
        for device in ("npu", "cpu"):
            faulthandler.dump_traceback_later(args.hang_s, exit=True)
            t0 = time.perf_counter()
            try:
                r = run_op(op, meshes[device], device, args.max_samples, args.max_combos)
            except Exception as err:  # the harness itself
                r = dict(status="error", reason=f"harness: {_first_line(err)}", where=_where(err), runs=0)
            seconds[device] += time.perf_counter() - t0
            # Keep ranks in step, and notice an op that behaved differently on different ranks.
            every = [None] * world
            dist.all_gather_object(every, (r["status"], r["reason"][:80]))
            if len(set(every)) > 1:
                r = dict(r, status="error", reason=f"ranks disagree: {every}")
            entry[device] = r
        results.append(entry)
        if args.verbose and rank == 0:
            print(f"{op.name}.{op.variant_test_name}: npu {entry['npu']['status']} cpu {entry['cpu']['status']}",
                  flush=True)
    faulthandler.cancel_dump_traceback_later()
    if rank == 0:
        with open(args.out, "w") as f:
            json.dump({"results": results, "seconds": seconds, "world_size": world}, f)
    dist.barrier()
    dist.destroy_process_group()


def summarize(results):
    """Counts per mesh, and the ops that fail on npu but pass on cpu."""
    counts = {d: {s: 0 for s in STATUSES} for d in ("npu", "cpu")}
    runs = {"npu": 0, "cpu": 0}
    for e in results:
        for d in ("npu", "cpu"):
            counts[d][e[d]["status"]] += 1
            runs[d] += e[d]["runs"]
    npu_only = [e for e in results if e["cpu"]["status"] == "pass" and e["npu"]["status"] != "pass"]
    cpu_only = [e for e in results if e["npu"]["status"] == "pass" and e["cpu"]["status"] != "pass"]
    return {"counts": counts, "runs": runs, "npu_only_failures": npu_only, "cpu_only_failures": cpu_only}


def run_sweep(fraction=1.0, ops=None, world_size=2, max_samples=2, max_combos=4, timeout=3600.0, verbose=False,
              hang_s=300.0):
    """Launches `world_size` ranks, sweeps, returns the report dict (results, counts, seconds, ...).

    Raises RuntimeError with the ranks' output if they fail or exceed `timeout` seconds.
    """
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "sweep.json")
        argv = ["-m", "npudist.testing.dtensor_sweep", "--worker", "--out", out, "--fraction", fraction,
                "--max-samples", max_samples, "--max-combos", max_combos, "--hang-s", hang_s]
        if ops:
            argv += ["--ops", ",".join(ops)]
        if verbose:
            argv.append("--verbose")
        from npudist.testing.multiproc import launch

        t0 = time.time()
        finished = launch(argv, world_size, timeout=timeout)
        if not finished.ok() or not os.path.exists(out):
            raise RuntimeError(f"DTensor sweep ranks failed:\n{finished.explain()}")
        with open(out) as f:
            report = json.load(f)
    report.update(summarize(report["results"]))
    report["wall_seconds"] = time.time() - t0
    report["settings"] = dict(fraction=fraction, ops=ops, world_size=world_size, max_samples=max_samples,
                              max_combos=max_combos)
    import torch

    report["torch"] = torch.__version__
    return report


def main(argv=None):
    ap = argparse.ArgumentParser(description="DTensor op sweep (one rank); see npudist.testing.dtensor_coverage")
    ap.add_argument("--worker", action="store_true", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--fraction", type=float, default=1.0)
    ap.add_argument("--ops", default="")
    ap.add_argument("--max-samples", type=int, default=2)
    ap.add_argument("--max-combos", type=int, default=4)
    ap.add_argument("--pg-timeout", type=float, default=300.0)
    ap.add_argument("--hang-s", type=float, default=300.0)
    ap.add_argument("--verbose", action="store_true")
    worker(ap.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
