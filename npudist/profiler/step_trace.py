"""Step traces: what ``npurun --profile`` recorded, in the planner's format (docs/plan.md).

While the job profiler records with step traces on (the default; ``NPUDIST_PROFILE_STEP_TRACE=0``
turns them off), the device core and hccl add to torch.profiler's events what a replay needs:
each kernel's inputs and outputs (shapes, dtypes, strides, bytes), each collective's group,
peer, issuing stream and issue time, and every stream synchronisation (an event recorded, a
stream made to wait for an event or a collective). :func:`from_chrome_trace` turns one rank's
exported trace into a step trace: one JSON object with the recorded steps' device ops in issue
order, the allocator's events and the peak. ``npudist.plan`` reads it.

FLOPs per op come from ``torch.utils.flop_counter.flop_registry`` (PyTorch's own formulas);
the CPU flash-attention ops the simulated npu runs (``_scaled_dot_product_flash_attention_for_cpu``
and its backward) use the registry's sdpa formulas, which they share their leading arguments with.
Custom ops register theirs with ``register_flop_formula`` (npudist's ``npu::npu_fusion_attention``
and its grad). Ops the registry does not know have ``flops`` 0 (memory-bound in the predictor's model).
"""
from __future__ import annotations

import bisect
import json
from typing import Any

STEP_TRACE_FORMAT = "npudist.step_trace"
STEP_TRACE_VERSION = "1.0"

# torch.profiler's dtype names (c10::toString) -> torch dtype names used in step traces
_DTYPES = {
    "Float": "float32", "Double": "float64", "Half": "float16", "BFloat16": "bfloat16", "Long": "int64",
    "Int": "int32", "Short": "int16", "Char": "int8", "Byte": "uint8", "Bool": "bool",
    "ComplexFloat": "complex64", "ComplexDouble": "complex128",
    "float": "float32", "double": "float64", "c10::Half": "float16", "c10::BFloat16": "bfloat16",
    "long int": "int64", "int": "int32", "bool": "bool", "unsigned char": "uint8", "signed char": "int8",
}

# Allocation primitives: a block's "owner" is the nearest enclosing op that is not one of these.
_ALLOC_OPS = {"aten::empty", "aten::empty_strided", "aten::empty_like", "aten::new_empty", "aten::new_empty_strided",
              "aten::zeros", "aten::zeros_like", "aten::new_zeros", "aten::ones", "aten::ones_like", "aten::full",
              "aten::to", "aten::_to_copy", "aten::copy_", "aten::resize_", "aten::clone", "aten::contiguous",
              "aten::detach", "aten::fill_", "aten::zero_", "aten::split_with_sizes_copy", "aten::cat"}

_SDPA_CPU = {"_scaled_dot_product_flash_attention_for_cpu": "_scaled_dot_product_flash_attention",
             "_scaled_dot_product_flash_attention_for_cpu_backward": "_scaled_dot_product_flash_attention_backward"}


def dtype_name(profiler_name: str) -> str:
    """torch.profiler's dtype name ("Float", "c10::BFloat16") -> "float32", "bfloat16" ..."""
    return _DTYPES.get(profiler_name, str(profiler_name).lower())


def _itemsize(dtype: str) -> int:
    import torch
    try:
        return torch.empty((), dtype=getattr(torch, dtype)).element_size()
    except (AttributeError, TypeError):
        return 1


def op_flops(name: str, input_dims: list, concrete: list) -> int:
    """FLOPs of aten op ``name`` ("aten::mm") from its arguments as a step trace stores them.

    ``input_dims[i]`` is a tensor argument's shape (a list of shapes for a tensor list), else [];
    ``concrete[i]`` the value of a scalar/list argument. Uses torch.utils.flop_counter's registry;
    0 when it does not know the op or its formula rejects the arguments.
    """
    import torch
    from torch.utils.flop_counter import flop_registry

    ns, _, base = name.rpartition("::")
    base = _SDPA_CPU.get(base.split(".", 1)[0], base.split(".", 1)[0])
    # custom ops (npu::npu_fusion_attention) register their formulas with register_flop_formula
    packet = getattr(getattr(torch.ops, ns or "aten", torch.ops.aten), base, None)
    formula = flop_registry.get(packet) if packet is not None else None
    if formula is None:
        return 0
    args = []
    for dims, value in zip(input_dims, concrete or [""] * len(input_dims), strict=False):
        if dims is None:  # not a tensor (a logical capture says so)
            args.append(None if value == "" else value)
        elif isinstance(dims, list) and dims and isinstance(dims[0], list):
            args.append([torch.Size(d) for d in dims])
        elif isinstance(dims, list) and (dims or value == ""):
            args.append(torch.Size(dims))
        else:
            args.append(None if value == "" else value)
    # The trace lists every schema argument, defaults included; a formula may take only the leading
    # ones (addmm's takes self, mat1, mat2): try all, then up to the last tensor argument.
    last = max((i for i, a in enumerate(args) if isinstance(a, (torch.Size, list))), default=-1)
    last_nonempty = max((i for i, a in enumerate(args) if isinstance(a, (torch.Size, list)) and len(a)), default=-1)
    for cut in (args, args[:last + 1], args[:last_nonempty + 1]):
        try:
            return int(formula(*cut, out_val=None))
        except Exception:  # noqa: BLE001 - a formula that needs what the trace lacks counts 0, as unknown ops do
            continue
    return 0


def _tensors(dims: list, types: list, strides: list) -> list:
    out = []
    for d, t, s in zip(dims, types, strides, strict=False):
        if isinstance(d, list) and d and isinstance(d[0], list):  # tensor list
            out.append([{"shape": di, "dtype": dtype_name(ti), "stride": si}
                        for di, ti, si in zip(d, t, s, strict=False)])
        elif t and t not in ("Scalar", "ScalarList"):
            out.append({"shape": d, "dtype": dtype_name(t), "stride": s})
        else:
            out.append(None)
    return out


class _Owners:
    """The innermost enclosing CPU op of a host timestamp, per thread."""

    def __init__(self, events):
        self.by_tid: dict[Any, tuple[list, list]] = {}
        rows: dict[Any, list] = {}
        for e in events:
            if e.get("ph") == "X" and e.get("cat") == "cpu_op":
                rows.setdefault(e.get("tid"), []).append((float(e["ts"]), float(e["ts"]) + float(e.get("dur", 0)),
                                                          e["name"]))
        for tid, r in rows.items():
            r.sort()
            self.by_tid[tid] = ([x[0] for x in r], r)

    def owner(self, tid, ts: float) -> str:
        starts, rows = self.by_tid.get(tid, ([], []))
        i = bisect.bisect_right(starts, ts) - 1
        fallback = ""
        for j in range(i, max(-1, i - 400), -1):
            s, e, name = rows[j]
            if s <= ts <= e:
                if name not in _ALLOC_OPS and not name.startswith("aten::empty"):
                    return name
                fallback = fallback or name
        return fallback or "(outside any op)"


def from_chrome_trace(trace: dict, *, rank: int, world_size: int, tokens_per_step: int | None = None,
                      device: int | None = None, first_step: int = 1, allocator_peak: int | None = None) -> dict:
    """One rank's exported torch.profiler trace -> its step trace (a JSON-able dict, docs/plan.md).

    ``allocator_peak``: ``torch.npu.max_memory_allocated()`` over the recorded steps, kept as
    ``memory.allocator_peak_allocated`` (what the predicted peak is checked against).
    Steps are the trace's ``ProfilerStep#N`` ranges, numbered from ``first_step`` in order.
    Work issued outside every step range is left out. Raises ValueError when the trace holds no
    step range or no npu activity recorded for a step trace (profiled without step traces on).
    """
    events = trace.get("traceEvents", [])
    steps = sorted((float(e["ts"]), float(e["ts"]) + float(e.get("dur", 0)))
                   for e in events if e.get("ph") == "X" and str(e.get("name", "")).startswith("ProfilerStep#")
                   and e.get("cat") != "gpu_user_annotation")  # the host's ranges, not their copies on npu lanes
    if not steps:
        raise ValueError("the trace has no ProfilerStep# range: record it with npurun --profile (the script calls "
                         "npudist.profiler.step() once per step)")
    starts = [s for s, _ in steps]

    def step_of(ts: float) -> int | None:
        i = bisect.bisect_right(starts, ts) - 1
        return i if i >= 0 and ts <= steps[i][1] else None

    ops: list[tuple[float, int, dict]] = []
    saw_shapes = False
    for e in events:
        args = e.get("args") or {}
        cat = args.get("category")
        if e.get("ph") != "X" or cat not in ("kernel", "memcpy", "collective", "graph", "sync"):
            continue
        if device is None:
            device = int(args.get("device", 0))
        ts, dur = float(e["ts"]), float(e.get("dur", 0))
        stream = int(args.get("stream_id", 0))
        if cat == "kernel":
            if "Input Dims" not in args:
                continue
            saw_shapes = True
            name = e["name"].removesuffix(" (npu kernel)")
            dims, concrete = args.get("Input Dims", []), args.get("Concrete Inputs", [])
            item = {"kind": "kernel", "name": name, "stream": stream,
                    "inputs": _tensors(dims, args.get("Input type", []), args.get("Input Strides", [])),
                    "outputs": _tensors(args.get("Output Dims", []), args.get("Output type", []),
                                        [[] for _ in args.get("Output Dims", [])]),
                    "concrete": concrete, "flops": op_flops(name, dims, concrete),
                    "bytes_read": int(args.get("bytes read", 0)), "bytes_written": int(args.get("bytes written", 0)),
                    "measured_us": dur}
            issue = ts
            host = (ts - float(args.get("Wait ns", 0)) / 1000.0, ts + dur)
        elif cat == "memcpy":
            kind = e["name"].split()[1] if len(e["name"].split()) > 1 else "DtoD"
            item = {"kind": "memcpy", "name": e["name"], "direction": kind, "stream": stream,
                    "bytes": int(args.get("bytes", 0)), "measured_us": dur}
            issue = ts
            host = (ts, ts + dur)
        elif cat == "graph":
            item = {"kind": "graph", "name": e["name"], "stream": stream, "nodes": int(args.get("nodes", 0)),
                    "measured_us": dur}
            issue = ts
            host = (ts, ts + dur)
        elif cat == "collective":
            if "Issue stream" not in args:
                continue
            ranks = args.get("Group ranks") or list(range(world_size))
            peer = int(args.get("Peer", -1))
            name = str(args.get("Collective name", e["name"])).removeprefix("hccl:")
            item = {"kind": "collective", "name": name, "pg": str(args.get("Process Group Name", "")),
                    "seq": int(args.get("Seq", 0)), "group_ranks": [int(r) for r in ranks],
                    "peer": ranks[peer] if 0 <= peer < len(ranks) else -1,
                    "is_p2p": name in ("send", "recv", "recvAnysource"),
                    "dtype": dtype_name(str(args.get("dtype", "Float"))), "bytes": int(args.get("bytes", 0)),
                    "in_bytes": int(args.get("In bytes", 0)), "out_bytes": int(args.get("Out bytes", 0)),
                    "stream": stream, "issue_stream": int(args.get("Issue stream", 0)), "measured_us": dur}
            issue = ts - float(args.get("Issue delay ns", 0)) / 1000.0
            host = (issue, issue)
        else:  # sync
            host = (ts, ts)
            if e["name"] == "npu event record":
                item = {"kind": "record", "stream": stream, "event": int(args.get("event", 0))}
            elif e["name"] == "npu stream wait event":
                item = {"kind": "wait_event", "stream": stream, "event": int(args.get("event", 0))}
            elif e["name"] in ("npu event synchronize", "npu stream synchronize", "npu device synchronize"):
                # the host waited (recorded at the end of the wait)
                item = {"kind": "sync_" + e["name"].split()[1], "stream": stream, "event": int(args.get("event", 0))}
                host = (ts - float(args.get("Wait ns", 0)) / 1000.0, ts)
            elif e["name"] == "npu stream wait collective":
                item = {"kind": "wait_collective", "stream": stream, "pg": str(args.get("Process Group Name", "")),
                        "seq": int(args.get("Seq", 0)), "is_p2p": bool(args.get("is_p2p", False)),
                        "blocking": bool(args.get("blocking", False))}
                host = (ts - float(args.get("Wait ns", 0)) / 1000.0, ts)  # a blocking wait is recorded at its end
            else:
                continue
            issue = ts
        k = step_of(issue)
        if k is None:
            continue
        item["step"] = first_step + k
        ops.append((issue, len(ops), item, host))
    if not saw_shapes:
        raise ValueError("the trace has no npu kernel with its inputs recorded: it was not recorded for a step trace "
                         "(npurun --profile records one unless NPUDIST_PROFILE_STEP_TRACE=0)")
    ops.sort(key=lambda x: (x[0], x[1]))
    t0 = steps[0][0]
    # host_gap_us: the host's own time before the item (Python, dispatch, ops that are no device work),
    # waits for streams and blocking waits for collectives taken out (they come out of the replay)
    prev_end = t0
    for issue, _, item, (h0, h1) in ops:
        item["t_us"] = round(issue - t0, 3)
        item["host_gap_us"] = round(max(0.0, h0 - prev_end), 3)
        prev_end = max(prev_end, h1)

    owners = _Owners(events)
    mem = []
    for e in events:
        args = e.get("args") or {}
        if e.get("name") != "[memory]" or int(args.get("Device Type", -1)) != 20:
            continue
        if device is not None and int(args.get("Device Id", device)) != device:
            continue
        ts = float(e["ts"])
        if step_of(ts) is None:
            continue
        mem.append({"t_us": round(ts - t0, 3), "step": first_step + step_of(ts), "bytes": int(args.get("Bytes", 0)),
                    "addr": int(args.get("Addr", 0)), "allocated": int(args.get("Total Allocated", 0)),
                    "reserved": int(args.get("Total Reserved", 0)), "op": owners.owner(e.get("tid"), ts)})
    mem.sort(key=lambda m: m["t_us"])
    baseline = mem[0]["allocated"] - mem[0]["bytes"] if mem else 0
    return {
        "format": STEP_TRACE_FORMAT, "version": STEP_TRACE_VERSION, "source": "npurun --profile",
        "rank": rank, "world_size": world_size, "device": device or 0,
        "steps": [first_step + i for i in range(len(steps))],
        "measured_step_us": [round(e - s, 3) for s, e in steps],
        "tokens_per_step": tokens_per_step,
        "ops": [item for _, _, item, _ in ops],
        "memory": {"baseline_allocated": baseline, "events": mem,
                   "peak_allocated": max([m["allocated"] for m in mem], default=baseline),
                   "peak_reserved": max([m["reserved"] for m in mem], default=0),
                   "allocator_peak_allocated": allocator_peak,
                   "rounding": "sizes are the caching allocator's blocks (its rounding applied)"},
    }


def write_step_trace(chrome_path: str, out_path: str, **kwargs) -> dict:
    """Reads the exported trace at ``chrome_path``, writes its step trace to ``out_path`` (JSON)."""
    with open(chrome_path, encoding="utf-8") as f:
        trace = json.load(f)
    st = from_chrome_trace(trace, **kwargs)
    with open(out_path, "w", encoding="utf-8") as f:
        json.dump(st, f, separators=(",", ":"))
    return st
