"""Logical capture, the first part of the planner: one training step at its real world size, no kernels run.

The caller sets up what the real job would (the model, its FSDP2/DTensor layout, the optimizer)
under torch's fake process group at the logical world size and FakeTensorMode, then records one
step with :class:`StepRecorder`::

    from torch._subclasses.fake_tensor import FakeTensorMode
    from npudist.plan.capture import StepRecorder, expand, init_fake_world

    init_fake_world(world_size=64, rank=0)            # "cpu:fake,npu:fake" + FakeStore
    mesh = init_device_mesh("npu", (64,))              # outside FakeTensorMode
    ... build the model on meta, fully_shard(..., mesh=mesh) ...
    with FakeTensorMode(allow_non_fake_inputs=True):
        model.to_empty(device="npu"); ...
        with StepRecorder(tokens=8 * 4096) as rec:
            loss = model(x).sum(); loss.backward(); opt.step()
    traces = expand(rec.trace(), range(64))            # every rank does the same work
    npudist.plan.predict(traces, hardware)

What the recorder writes is the step-trace format of docs/plan.md: every aten op that is device
work (views and other metadata-only ops are left out) with its shapes, dtypes, strides, FLOPs
(torch.utils.flop_counter's registry) and bytes; every c10d / functional collective with its group
and bytes. Dependencies are taken from the data: an op that reads a tensor a pending collective
writes waits for it (``wait_collective``; funcol's ``wait_tensor`` likewise), and an op that reads a
tensor last written on another stream makes its stream wait for that write (``record`` /
``wait_event``).

Memory (experimental, not yet checked against a real run's allocator): storages made inside the
recorder count from the op that made them (sizes rounded as the npu caching allocator rounds)
until the last tensor on them dies; storage resizes (FSDP2 frees unsharded parameters with
``untyped_storage().resize_(0)``) are picked up before each op for the storages FSDP2 can resize (empty when
the step begins, or made by ``torch.empty`` in it), for the others at the step's end (``resync_all``: every
storage before every op); ``baseline`` (e.g. the model's parameters) counts what existed before.

``python -m npudist.plan capture`` (npudist/plan/script.py) runs an unmodified npurun script this way.
``expand_layout`` gives each rank of a symmetric layout its own copy with its own groups (docs/plan.md,
"Representative ranks"); ``stage_ranks`` says which ranks a pipeline stage's trace stands for. Not done yet:
host gaps (a capture has no host time; the hardware's
``host_us`` is the only host cost).
"""
from __future__ import annotations

import sys

import torch
import torch.distributed as dist
from torch.utils._python_dispatch import TorchDispatchMode

from npudist import _env
from npudist.plan.trace import STEP_TRACE_FORMAT, STEP_TRACE_VERSION
from npudist.profiler.step_trace import op_flops

# ops that move no data on the device (views, metadata, allocation without initialisation)
_NO_WORK = {"aten::view", "aten::_unsafe_view", "aten::as_strided", "aten::t", "aten::transpose", "aten::permute",
            "aten::expand", "aten::reshape", "aten::squeeze", "aten::unsqueeze", "aten::slice", "aten::select",
            "aten::split", "aten::split_with_sizes", "aten::chunk", "aten::unbind", "aten::alias", "aten::detach",
            "aten::empty", "aten::empty_strided", "aten::empty_like", "aten::new_empty", "aten::new_empty_strided",
            "aten::_reshape_alias", "aten::unflatten", "aten::flatten", "aten::lift_fresh", "aten::set_",
            "aten::resize_", "aten::is_same_size", "aten::_to_copy_meta", "aten::sym_size", "aten::sym_stride",
            "aten::sym_numel", "aten::_local_scalar_dense", "aten::record_stream", "aten::view_as",
            "aten::_has_compatible_shallow_copy_type", "aten::unsqueeze_", "aten::as_strided_", "aten::narrow"}
_COLL = {  # op -> (hccl's collective name, which tensors give the nccl-tests size)
    "c10d::_allgather_base_": ("_allgather_base", "out"), "c10d::allgather_": ("allgather", "out"),
    "c10d::_reduce_scatter_base_": ("_reduce_scatter_base", "in"), "c10d::reduce_scatter_": ("reduce_scatter", "in"),
    "c10d::allreduce_": ("all_reduce", "in"), "c10d::broadcast_": ("broadcast", "in"),
    "c10d::alltoall_base_": ("alltoall_base", "in"), "c10d::send": ("send", "in"), "c10d::recv_": ("recv", "in"),
    "_c10d_functional::all_gather_into_tensor": ("all_gather_into_tensor", "out"),
    "_c10d_functional::reduce_scatter_tensor": ("reduce_scatter_tensor", "in"),
    "_c10d_functional::all_reduce": ("all_reduce", "in"),
    "_c10d_functional::all_to_all_single": ("all_to_all", "in"),
    "_c10d_functional::all_gather_into_tensor_coalesced": ("allgather_into_tensor_coalesced", "out"),
    "_c10d_functional::reduce_scatter_tensor_coalesced": ("reduce_scatter_tensor_coalesced", "in"),
}
_recording: list = []  # the StepRecorders entered and not yet exited, innermost last (see recording())
# true: check the size of every storage made before the step before every op (what the capture did before it
# followed only the empty ones, FSDP2's freed all-gather outputs; slow): the equivalence check's reference
RESYNC_ALL_ENV = "NPUDIST_PLAN_CAPTURE_RESYNC_ALL"
COMM_STREAM_BASE = 1 << 20  # stream ids the capture gives each group's communicator (not real npu streams)


def init_fake_world(world_size: int, rank: int = 0) -> None:
    """torch's fake process group at ``world_size`` (``"cpu:fake,npu:fake"``: plain "fake" does not cover
    npu tensors) as this process's default group, standing for ``rank``."""
    from torch.testing._internal.distributed.fake_pg import FakeStore

    dist.init_process_group("cpu:fake,npu:fake", store=FakeStore(), rank=rank, world_size=world_size)


def recording():
    """The innermost :class:`StepRecorder` now recording, or None: what a process group that does not go through the
    dispatcher (npudist.plan.pipeline_group) records its collectives with."""
    return _recording[-1] if _recording else None


def _flat_tensors(x) -> list[torch.Tensor]:
    out = []
    for a in x if isinstance(x, (list, tuple)) else [x]:
        if isinstance(a, torch.Tensor):
            out.append(a)
        elif isinstance(a, (list, tuple)):
            out.extend(t for t in a if isinstance(t, torch.Tensor))
    return out


def _in_sharding_propagation() -> bool:
    """True inside DTensor's ShardingPropagator, which runs an op once on fake tensors of the global shapes
    to learn its output's shape (no device work of any rank: not recorded, not counted as memory)."""
    f = sys._getframe(2)
    for _ in range(40):
        if f is None:
            return False
        if f.f_code.co_name == "_propagate_tensor_meta_non_cached":
            return True
        f = f.f_back
    return False


def _key(t: torch.Tensor) -> int:
    return t.untyped_storage()._cdata


def _desc(t) -> dict | list | None:
    if isinstance(t, torch.Tensor):
        return {"shape": list(t.shape), "dtype": str(t.dtype).removeprefix("torch."), "stride": list(t.stride())}
    if isinstance(t, (list, tuple)) and t and all(isinstance(x, torch.Tensor) for x in t):
        return [_desc(x) for x in t]
    return None


def _rounded(n: int) -> int:
    """A request's size after the npu caching allocator's rounding (csrc/core/allocator/device_cache.h:
    up to a multiple of 512 B; PYTORCH_NPU_ALLOC_CONF's roundup_power2_divisions is not modelled)."""
    return (int(n) + 511) // 512 * 512 if n else 0


def _nbytes(ts) -> int:
    return sum(t.numel() * t.element_size() for t in ts)


class StepRecorder(TorchDispatchMode):
    """Records the device work of the code run inside it as one step of a step trace (module doc).

    ``tokens``: this rank's tokens per step (for tokens/s). Use inside FakeTensorMode with a fake
    process group as the default group; :meth:`trace` returns the step trace. ``baseline``: tensors made
    before the step, counted in ``baseline_allocated``; ``existing``: the same, and also followed during the
    step (freed when their last tensor dies, resized as FSDP2 resizes unsharded parameters: checked before each op
    for those empty now, FSDP2's freed all-gather outputs, and at the step's end for the others). ``resync_all``:
    check every one before every op (slow; the reference the equivalence test compares with); None: the
    ``NPUDIST_PLAN_CAPTURE_RESYNC_ALL`` environment variable (default false). Raises ValueError for a bad value
    of that variable.
    """

    def __init__(self, tokens: int | None = None, step: int = 1, baseline=(), existing=(),
                 resync_all: bool | None = None):
        super().__init__()
        if resync_all is None:
            resync_all = _env.get_bool(RESYNC_ALL_ENV, False)
        self.resync_all = resync_all
        self.tokens = tokens
        self.step = step
        # memory: storages made inside the recorder, alive while any tensor on them is (PyTorch keeps a
        # tensor's Python object alive while C++ holds the tensor, e.g. autograd's saved tensors)
        self.mem_live: dict[int, list] = {}   # storage -> [tensors alive, rounded bytes, op]
        # storages _resync checks before each op; a dict for its order (the order of one resync's events)
        self.resizable: dict[int, None] = {}
        self.mem_events: list[dict] = []
        self.mem_now = 0
        self.baseline = 0
        seen = set()
        for t in baseline:
            t = getattr(t, "_local_tensor", t)
            if isinstance(t, torch.Tensor) and _key(t) not in seen:
                seen.add(_key(t))
                self.baseline += _rounded(t.untyped_storage().nbytes())
        # ``existing``: tensors made before the step whose storages count in the baseline and are followed from
        # now on (freed when their last tensor dies, resized as FSDP2 does): an unmodified script's state
        import weakref
        for t in existing:
            k = _key(t)
            if k in seen:
                continue
            entry = self.mem_live.get(k)
            if entry is None:
                nbytes = _rounded(t.untyped_storage().nbytes())
                entry = self.mem_live[k] = [0, nbytes, "allocated before the traced steps", weakref.ref(t)]
                self.baseline += nbytes
                # FSDP2 resizes only its all-gather outputs (alloc_storage / free_storage), and frees them after
                # each forward / backward: between steps they are empty. A storage that is not empty here is
                # parameters, gradients or optimizer state, which nothing resizes: following those thousands
                # before every op was over a third of the capture's CPU time. ``resync_all``: follow every one (the check)
                if nbytes == 0 or self.resync_all:
                    self.resizable[k] = None
            entry[0] += 1
            weakref.finalize(t, self._drop, k)
        self.ops: list[dict] = []
        self.pending: dict[int, tuple[str, int]] = {}   # storage -> (pg, seq) of the collective writing it
        self.writer: dict[int, tuple[int, int]] = {}     # storage -> (stream, index in ops) of its last writer
        self.seq: dict[str, int] = {}
        self.comm_streams: dict[object, int] = {}
        self.events = 0
        self.in_collective = 0  # > 0 while a collective op seen by the dispatcher runs (see record_collective)

    def __enter__(self):
        _recording.append(self)
        return super().__enter__()

    def __exit__(self, *exc):
        if self in _recording:
            _recording.remove(self)
        return super().__exit__(*exc)

    def _stream(self) -> int:
        return int(torch.npu.current_stream().stream_id)

    def _group(self, func_name: str, args) -> tuple[str, list[int]]:
        if func_name.startswith("_c10d_functional::"):
            names = [a for a in args if isinstance(a, str)]
            pg = torch.distributed.distributed_c10d._resolve_process_group(names[-1]) if names else dist.group.WORLD
        else:
            # c10d ops carry the group as a ScriptObject (the boxed ProcessGroup)
            pg = next((dist.ProcessGroup.unbox(a) if isinstance(a, torch.ScriptObject) else a for a in args
                       if isinstance(a, (dist.ProcessGroup, torch.ScriptObject))), dist.group.WORLD)
        return pg.group_name, dist.get_process_group_ranks(pg)

    def _before_read(self, inputs: list[torch.Tensor], stream: int) -> None:
        for t in inputs:
            k = _key(t)
            if k in self.pending:
                pg, seq, p2p = self.pending.pop(k)
                self.ops.append({"kind": "wait_collective", "stream": stream, "pg": pg, "seq": seq, "is_p2p": p2p,
                                 "blocking": False, "step": self.step})
            w = self.writer.get(k)
            if w is not None and w[0] != stream:
                self.events += 1
                # the record goes right after the write, the wait here
                self.ops.insert(w[1] + 1, {"kind": "record", "stream": w[0], "event": self.events, "step": self.step})
                self._shift(w[1] + 1)
                self.ops.append({"kind": "wait_event", "stream": stream, "event": self.events, "step": self.step})
                self.writer[k] = (stream, len(self.ops) - 1)

    def _shift(self, at: int) -> None:
        for k, (s, i) in self.writer.items():
            if i >= at:
                self.writer[k] = (s, i + 1)

    def _track(self, outs, name: str, is_view: bool) -> None:
        import weakref
        for t in outs:
            k = _key(t)
            entry = self.mem_live.get(k)
            if entry is None:
                if is_view:  # a view of a storage made before the recorder: part of the baseline
                    continue
                nbytes = _rounded(t.untyped_storage().nbytes())
                entry = self.mem_live[k] = [0, nbytes, name, weakref.ref(t)]
                self._mem(nbytes, k, name)
                if "empty" in name:
                    self.resizable[k] = None
            entry[0] += 1
            weakref.finalize(t, self._drop, k)

    def _resync(self, every: bool = False) -> None:
        # FSDP2 frees and re-allocates unsharded parameters with untyped_storage().resize_(), which is
        # no dispatcher op: compare the size of each live storage that may be resized with what was counted.
        # Those are FSDP2's all-gather outputs: empty when the step began, or made by torch.empty in it (``resizable``);
        # checking every live storage before every op made a step holding many activations (1F1B's micro-
        # batches) slow. ``every``: all of them (the step's end)
        for k in list(self.mem_live if every else self.resizable):
            entry = self.mem_live.get(k)
            if entry is None:
                self.resizable.pop(k, None)
                continue
            t = entry[3]()
            if t is None:
                continue
            n = _rounded(t.untyped_storage().nbytes())
            if n != entry[1]:
                self._mem(n - entry[1], k, entry[2] if n < entry[1] else "storage resize_ (FSDP2 unshard)")
                entry[1] = n

    def _drop(self, k: int) -> None:
        entry = self.mem_live.get(k)
        if entry is None:
            return
        entry[0] -= 1
        if entry[0] == 0:
            del self.mem_live[k]
            self._mem(-entry[1], k, entry[2])
            # the address may be reused by a storage made later: it must not inherit this one's last writer
            # (a spurious record / wait_event pair) or pending collective
            self.writer.pop(k, None)
            self.pending.pop(k, None)
            self.resizable.pop(k, None)

    def _mem(self, delta: int, k: int, op: str) -> None:
        self.mem_now += delta
        self.mem_events.append({"t_us": float(len(self.ops)), "step": self.step, "bytes": delta, "addr": k,
                                "allocated": self.baseline + self.mem_now, "reserved": 0, "op": op})

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        from torch.distributed.tensor import DTensor

        if any(issubclass(t, DTensor) for t in types):
            return NotImplemented  # DTensor runs the op on its local shards: those are what a rank does
        kwargs = kwargs or {}
        if _in_sharding_propagation():
            return func(*args, **kwargs)  # DTensor runs the op on global-shape fakes for its output's metadata
        self._resync()
        name = func._schema.name
        self.in_collective += name in _COLL  # a functional collective may call a Python group's method: one record
        try:
            out = func(*args, **kwargs)
        finally:
            self.in_collective -= name in _COLL
        if not any(t.device.type == "npu" for t in _flat_tensors(list(args) + list(kwargs.values()))
                   + _flat_tensors(out)) and not name.startswith(("c10d::", "_c10d_functional::")):
            return out  # no device work (host tensors)
        self._track(_flat_tensors(out), name, func.is_view or name in _NO_WORK and "empty" not in name)
        if name == "_c10d_functional::wait_tensor":
            self._before_read(_flat_tensors(args), self._stream())
            return out
        if name in _COLL:
            self._collective(name, func, args, kwargs, out)
            return out
        # aten ops and custom ops such as FSDP2's fsdp::all_gather_copy_in / split_with_sizes_copy
        if name in _NO_WORK or func.is_view or name.startswith(("profiler::", "prim::")):
            return out
        ins = _flat_tensors(list(args) + list(kwargs.values()))
        outs = _flat_tensors(out)
        stream = self._stream()
        self._before_read(ins, stream)
        schema_args = [a for a in func._schema.arguments]
        vals = [kwargs.get(a.name, args[i] if i < len(args) else None) for i, a in enumerate(schema_args)]
        dims = [list(v.shape) if isinstance(v, torch.Tensor) else
                ([list(t.shape) for t in v] if isinstance(v, (list, tuple)) and v and
                 all(isinstance(t, torch.Tensor) for t in v) else None) for v in vals]
        concrete = [v if isinstance(v, (int, float, bool, str)) else "" for v in vals]
        written = outs + [a for a, s in zip(vals, schema_args, strict=False)
                          if isinstance(a, torch.Tensor) and s.alias_info is not None and s.alias_info.is_write]
        self.ops.append({"kind": "kernel", "name": name, "stream": stream, "inputs": [_desc(v) for v in vals],
                         "outputs": [_desc(o) for o in outs], "concrete": concrete, "flops": op_flops(name, dims, concrete),
                         "bytes_read": _nbytes(ins), "bytes_written": _nbytes(outs), "step": self.step})
        for t in written:
            self.writer[_key(t)] = (stream, len(self.ops) - 1)
        return out

    def _collective(self, name, func, args, kwargs, out) -> None:
        hccl_name, which = _COLL[name]
        pg, ranks = self._group(name, list(args) + list(kwargs.values()))
        if name.startswith("_c10d_functional::"):
            ins, outs = _flat_tensors(args[0]), _flat_tensors(out)
        elif name in ("c10d::allreduce_", "c10d::broadcast_", "c10d::send"):
            ins = outs = [t for x in _flat_tensors(args[0]) for t in _flat_tensors(x)]
        else:  # c10d ops that take (outputs, inputs, ...)
            outs = [t for x in (args[0] if isinstance(args[0], (list, tuple)) else [args[0]]) for t in _flat_tensors(x)]
            ins = [t for x in (args[1] if isinstance(args[1], (list, tuple)) else [args[1]]) for t in _flat_tensors(x)]
        # send / recv: the peer is args[2], a rank of the group
        p2p = name in ("c10d::send", "c10d::recv_")
        self.record_collective(hccl_name, pg, ranks, ins, outs, int(args[2]) if p2p else None)

    def record_collective(self, hccl_name: str, pg: str, ranks: list[int], ins, outs, peer: int | None = None) -> None:
        """Records a collective (hccl's name: ``all_reduce``, ``send``, ...) of group ``pg`` (its name; ``ranks``:
        its global ranks in group order) reading ``ins`` and writing ``outs``; ``peer``: a send's / recv's peer as
        a rank of the group (None for a collective). What the c10d ops seen by the dispatcher call, and what a
        process group that does not go through the dispatcher calls itself (npudist.plan.pipeline_group)."""
        stream = self._stream()
        self._before_read(ins, stream)
        # p2p have their own sequence numbers (as hccl's)
        p2p = peer is not None
        peer = ranks[peer] if p2p and 0 <= peer < len(ranks) else -1
        key = ("p2p", pg) if p2p else pg
        seq = self.seq[key] = self.seq.get(key, 0) + 1
        # a send and a receive proceed independently (a pipeline's batched isend/irecv): each direction and peer
        # has its stream, as NCCL/HCCL give point-to-point its own communicator per peer
        comm = self.comm_streams.setdefault((pg, hccl_name, peer) if p2p else pg,
                                            COMM_STREAM_BASE + len(self.comm_streams))
        in_b, out_b = _nbytes(ins), _nbytes(outs)
        dtype = str((ins or outs)[0].dtype).removeprefix("torch.") if (ins or outs) else "float32"
        self.ops.append({"kind": "collective", "name": hccl_name, "pg": pg, "seq": seq,
                         "group_ranks": sorted({dist.get_rank(), peer}) if p2p else ranks, "peer": peer,
                         **({"pg_ranks": ranks} if p2p else {}),
                         "is_p2p": p2p, "dtype": dtype, "bytes": max(in_b, out_b), "in_bytes": in_b,
                         "out_bytes": out_b, "stream": comm, "issue_stream": stream, "step": self.step})
        for t in outs:
            self.pending[_key(t)] = (pg, seq, p2p)
            self.writer.pop(_key(t), None)

    def trace(self) -> dict:
        """The recorded step as a step trace of this process's rank (docs/plan.md)."""
        self._resync(every=True)
        for i, o in enumerate(self.ops):
            o.setdefault("t_us", float(i))
            o.setdefault("host_gap_us", 0.0)
        return {"format": STEP_TRACE_FORMAT, "version": STEP_TRACE_VERSION, "source": "logical capture",
                "rank": dist.get_rank(), "world_size": dist.get_world_size(), "device": 0, "steps": [self.step],
                "measured_step_us": [], "tokens_per_step": self.tokens, "ops": list(self.ops),
                "memory": {"baseline_allocated": self.baseline, "events": list(self.mem_events),
                           "peak_allocated": self.baseline + max([0] + [e["allocated"] - self.baseline
                                                                        for e in self.mem_events]),
                           "rounding": "fake storages' sizes rounded as the npu caching allocator does (512 B)"}}


def expand(trace: dict, ranks) -> dict[int, dict]:
    """rank -> trace for ``ranks`` that do the same work as the traced rank (same shapes, same groups'
    sizes): copies with the rank replaced. Which ranks those are is the caller's claim (docs/plan.md)."""
    out = {}
    for r in ranks:
        t = dict(trace)
        t["rank"] = int(r)
        out[int(r)] = t
    return out


def _counterpart(group: list[int], rank: int) -> list[int]:
    """The group ``rank`` is in that corresponds to ``group`` (a group of the traced rank) in a row-major device
    mesh: such a group is an arithmetic progression (stride s, n ranks) starting in the first s ranks of an
    aligned block of s x n ranks; its counterpart has the same stride and size and contains ``rank``. Groups of
    another shape (made by hand) are kept as they are."""
    g = sorted(int(x) for x in group)
    n = len(g)
    if n < 2:
        return [rank]
    s = g[1] - g[0]
    if s < 1 or any(b - a != s for a, b in zip(g, g[1:], strict=False)) or g[0] % (s * n) >= s:
        return g
    start = rank // (s * n) * (s * n) + rank % s
    return [start + i * s for i in range(n)]


def expand_layout(trace: dict, ranks) -> dict[int, dict]:
    """rank -> trace for ``ranks`` that do the same work as the traced rank (docs/plan.md, "Representative
    ranks"), each with its own groups: a collective's group becomes that rank's counterpart group in a
    row-major device mesh (:func:`_counterpart`), its ``pg`` suffixed with the group's first rank so the
    replay joins the right ranks, and a send's / recv's peer moves by the same offset as the rank (the
    pipeline peer of the same mesh position). Unlike :func:`expand`, copies do not share group lists."""
    traced = int(trace["rank"])
    groups = {}
    for o in trace["ops"]:
        if o["kind"] == "collective" and not o.get("is_p2p"):
            groups.setdefault(str(o["pg"]), o["group_ranks"])
    out = {}
    for r in ranks:
        r = int(r)
        first = {pg: _counterpart(g, r)[0] for pg, g in groups.items()}
        ops = []
        for o in trace["ops"]:
            if o["kind"] == "collective":
                o = dict(o)
                if o.get("is_p2p") or o["name"] in ("send", "recv"):
                    if int(o.get("peer", -1)) >= 0:
                        o["peer"] = int(o["peer"]) + r - traced
                        o["group_ranks"] = sorted({r, o["peer"]})
                else:
                    o["group_ranks"] = _counterpart(o["group_ranks"], r)
                    o["pg"] = f"{o['pg']}@{first[str(o['pg'])]}"
            elif o["kind"] == "wait_collective" and not o.get("is_p2p") and str(o["pg"]) in first:
                o = dict(o, pg=f"{o['pg']}@{first[str(o['pg'])]}")
            ops.append(o)
        t = dict(trace, rank=r, ops=ops)
        if r != traced:  # a copy stands for itself; the traced rank keeps what it represents
            t.pop("represents", None)
        out[r] = t
    return out


def stage_ranks(trace: dict) -> list[int]:
    """The ranks that do the traced rank's work: all ranks, or, when the trace sends or receives (a pipeline
    stage), the ranks of its stage: with the pipeline group (``pg_ranks`` of its send/recv) an arithmetic
    progression of stride d over S stages, as a row-major device mesh lays it out, rank r is in stage
    (r // d) % S. Raises ValueError for a pipeline group of another shape."""
    world, me = int(trace["world_size"]), int(trace["rank"])
    pp = next((o.get("pg_ranks") for o in trace["ops"] if o["kind"] == "collective" and o.get("is_p2p")), None)
    if not pp or len(pp) < 2:
        return list(range(world))
    pp = sorted(pp)
    d, n = pp[1] - pp[0], len(pp)
    if any(b - a != d for a, b in zip(pp, pp[1:], strict=False)):
        raise ValueError(f"rank {me}: its pipeline group {pp} is not evenly spaced; capture every rank (--ranks)")
    return [r for r in range(world) if (r // d) % n == (me // d) % n]
