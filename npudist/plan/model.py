"""``python -m npudist.plan model --family llama ...``: a published training configuration in one command.

What is captured and what is composed on top (docs/plan.md, "Model command"):

1. **Captured** (npudist.plan.capture's StepRecorder under FakeTensorMode and torch's fake process group,
   TP ranks 0..tp-1 of one node): one micro-batch's forward (step 1) and backward (step 2) of three pieces
   built with npudist.plan.llama and DTensor tensor/sequence parallelism: the embedding, ONE decoder layer,
   and the head (final norm, output layer, cross-entropy). Each is replayed on the hardware file
   (npudist.plan.predict's replay: GEMM rooflines with tile/wave quantisation, fused kernels' bytes, the
   TP all-gathers / reduce-scatters / all-reduces on the full-mesh links) for its forward and backward
   time, FLOPs and memory (what the forward leaves alive, the backward's transient above it).
2. **Scaled**: a stage has ``layers / pp`` identical layers (or, with MindSpeed-LLM's ``--num-layer-list``,
   the listed count of each stage): its time and saved activations are the layer's times that count
   (exact: the layers are the same ops on the same shapes), plus the embedding on the first stage and the
   head on the last.
3. **Composed analytically** (Megatron's schedules and optimizer; torch 2.13's pipelining schedules
   cannot run under the fake group, see docs/plan.md): the 1F1B pipeline over ``m = gbs / (mbs dp)``
   micro-batches, ``T = (m - 1) max_s t_s + sum_s t_s`` with t_s a stage's forward + backward + its two
   activation transfers (send/recv at the hardware's p2p cost), and with ``vpp_layers`` (interleaved
   virtual stages, v = layers_per_stage / vpp_layers chunks) ``T = m max_s t_s + (sum_s t_s - max_s t_s) / v``
   plus v times the transfers; the data-parallel gradient reduction (all_reduce of the gradients, or with
   ``distributed_optimizer`` Megatron's reduce_scatter of the gradients and all_gather of the parameters)
   at the collective cost of the DP group's ranks (Megatron's rank order: TP fastest, then DP, then PP),
   all exposed unless ``overlap_grad_reduce`` (then only the part that exceeds the last micro-batch's
   backward, and at least one 40M-parameter bucket, is) and, for the parameters' all_gather,
   ``overlap_param_gather`` (what exceeds the first micro-batch's forward, at least one bucket); the Adam
   step as a memory-bound pass.
   Memory per stage (Megatron's mixed precision): parameters 2 B + gradients 4 B (bf16: Megatron reduces
   them in fp32; fp16: 2 B) + fp32 master weights and Adam's two moments 12 B, divided by DP under the
   distributed optimizer; plus the activations of the micro-batches in flight (1F1B: ``pp - s`` on stage
   s; interleaved: Megatron's warm-up count of chunks) and the largest backward transient of its pieces.

Raises ValueError naming the flag for a layout that cannot split the model.
"""
from __future__ import annotations

import dataclasses
import functools
import math

from npudist.plan.cost import collective_time
from npudist.plan.hardware import Hardware
from npudist.plan.llama import LlamaConfig, check_layout

GiB = 1024 ** 3
RECOMPUTE = ("none", "selective", "full")
BUCKET_PARAMS = 40_000_000  # Megatron's default DDP bucket: max(40M, 1M x dp) parameters


@dataclasses.dataclass(frozen=True)
class Layout:
    """A parallel layout of one job. ``nodes`` x hardware devices per node NPUs = tp x pp x dp."""
    tp: int
    pp: int
    dp: int
    mbs: int
    gbs: int
    vpp_layers: int | None = None
    sequence_parallel: bool = False
    recompute: str = "none"
    distributed_optimizer: bool = False
    overlap_grad_reduce: bool = False
    overlap_param_gather: bool = False  # Megatron's --overlap-param-gather (with the distributed optimizer)
    mc2: bool = True  # TP collectives fused with their GEMMs (MindSpeed's --use-mc2): tp_comm_overlap applies
    num_layer_list: tuple[int, ...] | None = None  # MindSpeed-LLM's --num-layer-list: layers of each stage

    def stage_layers(self, layers: int) -> list[int]:
        """The decoder layers of each pipeline stage: ``num_layer_list`` when given, else ``layers / pp`` each."""
        return list(self.num_layer_list) if self.num_layer_list else [layers // self.pp] * self.pp

    @property
    def npus(self) -> int:
        return self.tp * self.pp * self.dp


@dataclasses.dataclass
class Piece:
    """One captured piece's replayed figures for one micro-batch on one TP rank."""
    fwd_s: float
    bwd_s: float
    fwd_flops: float
    fwd_tp_comm_s: float  # the TP collectives' time inside fwd_s / bwd_s (all exposed in the replay)
    bwd_tp_comm_s: float
    params: int         # this TP rank's parameters of the piece
    act_bytes: int      # alive after the forward (saved for backward, the output)
    transient_bytes: int  # the backward's peak above that


def _replay_steps(trace: dict, hw: Hardware, tp: int) -> tuple[float, float, float, float, float]:
    """(forward s, backward s, forward FLOPs, forward TP-communication s, backward TP-communication s)."""
    from npudist.plan.capture import expand
    from npudist.plan.replay import Replay

    tl = Replay(expand(trace, range(tp)), hw, hw.devices_per_node).run()[0]
    s1, s2 = tl.steps.get(1, (0.0, 0.0)), tl.steps.get(2, (0.0, 0.0))
    comm = {1: 0.0, 2: 0.0}
    for iv in tl.intervals:
        if iv.kind == "comm":
            comm[iv.step] = comm.get(iv.step, 0.0) + iv.end - iv.start
    return s1[1] - s1[0], s2[1] - s2[0], tl.flops.get(1, 0.0), comm[1], comm[2]


def _memory(trace: dict) -> tuple[int, int]:
    """(alive after the forward, backward peak above it) from a capture's allocator events."""
    base = trace["memory"]["baseline_allocated"]
    after_fwd, peak_bwd = base, base
    for ev in trace["memory"]["events"]:
        if ev["step"] == 1:
            after_fwd = ev["allocated"]
        else:
            peak_bwd = max(peak_bwd, ev["allocated"])
    return after_fwd - base, max(0, peak_bwd - after_fwd)


@functools.lru_cache(maxsize=64)
def capture_pieces(cfg: LlamaConfig, tp: int, mbs: int, sequence_parallel: bool, recompute: str) -> dict[str, dict]:
    """The step traces (forward = step 1, backward = step 2) of the embedding, one layer and the head for one
    micro-batch on TP rank 0. Needs a fake world of at least ``tp`` ranks as the default process group
    (:func:`npudist.plan.capture.init_fake_world`)."""
    import torch
    from torch._subclasses.fake_tensor import FakeTensorMode

    import npudist.dtensor  # noqa: F401  (registers the npu fused ops and their sharding)
    from npudist.plan import llama
    from npudist.plan.capture import StepRecorder

    sp = sequence_parallel and tp > 1
    with torch.device("meta"):
        emb, layer, head = llama.Embedding(cfg), llama.DecoderLayer(cfg, recompute), llama.Head(cfg)
    for m in (emb, layer, head):
        m.to(cfg.torch_dtype)
    if tp > 1:
        from torch.distributed.device_mesh import DeviceMesh
        torch.npu.set_device(0)  # TP rank 0's device, as a launched rank sets it (else DeviceMesh warns the user)
        llama.parallelize(emb, layer, head, DeviceMesh("npu", list(range(tp))), sp)
    dt = cfg.torch_dtype
    seq_local = cfg.seq // tp if sp else cfg.seq
    tokens = mbs * cfg.seq
    out = {}
    with FakeTensorMode(allow_non_fake_inputs=True):
        for m in (emb, layer, head):
            m.to_empty(device="npu")
        layer.set_tables()
        idx = torch.zeros(mbs, cfg.seq, dtype=torch.long, device="npu")
        for name, mod in (("embedding", emb), ("layer", layer), ("head", head)):
            x = torch.empty(seq_local, mbs, cfg.hidden, dtype=dt, device="npu", requires_grad=True)
            with StepRecorder(tokens=tokens, baseline=list(mod.parameters()) + [x, idx]) as rec, _loss_ctx(
                    name == "head" and tp > 1):
                if name == "embedding":
                    y = mod(idx)
                elif name == "layer":
                    y = mod(x)
                else:
                    y = mod(x, idx)
                rec.step = 2
                y.backward(None if name == "head" else torch.empty_like(y))
                del y
            t = rec.trace()
            t["steps"] = [1, 2]
            out[name] = t
    return out


def _loss_ctx(parallel: bool):
    """torch's loss_parallel (cross-entropy on vocabulary-sharded logits) for the head under TP."""
    import contextlib

    if not parallel:
        return contextlib.nullcontext()
    from torch.distributed.tensor.parallel import loss_parallel
    return loss_parallel()


def _local_params(cfg: LlamaConfig, tp: int) -> dict[str, int]:
    return {"embedding": cfg.vocab * cfg.hidden // tp, "layer": (cfg.layer_params() - 2 * cfg.hidden) // tp + 2 * cfg.hidden, "head": cfg.vocab * cfg.hidden // tp + cfg.hidden}


_PIECES: dict[tuple, dict[str, Piece]] = {}


def pieces(cfg: LlamaConfig, lay: Layout, hw: Hardware) -> dict[str, Piece]:
    """Captures and replays (both cached per process) the three pieces of ``cfg`` under ``lay`` on ``hw``."""
    key = (cfg, lay.tp, lay.mbs, lay.sequence_parallel and lay.tp > 1, lay.recompute, repr(hw))
    if key not in _PIECES:
        _PIECES[key] = _pieces(cfg, lay, hw)
    return _PIECES[key]


def ensure_fake_world(size: int) -> None:
    """torch's fake process group of ``size`` ranks as the default group (rank 0), unless one of at least that
    size is already there. Raises ValueError when another default group is."""
    import torch.distributed as dist

    from npudist.plan.capture import init_fake_world

    if not dist.is_initialized():
        init_fake_world(size, 0)
    elif dist.get_backend() != "fake" and "fake" not in str(dist.get_backend()) or dist.get_world_size() < size:
        raise ValueError(f"a default process group ({dist.get_backend()}, {dist.get_world_size()} ranks) exists; "
                         f"the model command captures under torch's fake group of {size}: run it in its own process")


def _pieces(cfg: LlamaConfig, lay: Layout, hw: Hardware) -> dict[str, Piece]:
    traces = capture_pieces(cfg, lay.tp, lay.mbs, lay.sequence_parallel and lay.tp > 1, lay.recompute)
    params = _local_params(cfg, lay.tp)
    out = {}
    for name, t in traces.items():
        f, b, fl, fc, bc = _replay_steps(t, hw, lay.tp)
        act, trans = _memory(t)
        out[name] = Piece(f, b, fl, fc, bc, params[name], act, trans)
    return out


def tp_comm_overlap(hw: Hardware) -> float:
    """The fraction of the TP collectives' time hidden behind the GEMMs beside them (MindSpeed's MC2 fuses
    them): ``[calibration] tp_comm_overlap`` of the hardware file, 0 when absent (docs/plan.md)."""
    v = float(hw.raw.get("calibration", {}).get("tp_comm_overlap", 0.0))
    if not 0.0 <= v <= 1.0:
        raise ValueError(f"{hw.source}: [calibration] tp_comm_overlap = {v}: give a fraction in [0, 1]")
    return v


def _hidden(t: float, comm: float, overlap: float) -> float:
    """A piece's time when ``overlap`` of its TP communication hides behind its compute (at most all of it)."""
    return t - overlap * min(comm, max(0.0, t - comm))


def _rank(lay: Layout, stage: int, dp_index: int = 0, tp_index: int = 0) -> int:
    return stage * lay.tp * lay.dp + dp_index * lay.tp + tp_index


def check_positive(lay: Layout, nodes: int) -> None:
    """ValueError naming the flag when a count of the layout or ``nodes`` is not a positive integer (zero or negative
    sizes would divide by zero or give negative times further on)."""
    for flag, v in (("--tp", lay.tp), ("--pp", lay.pp), ("--dp", lay.dp), ("--mbs", lay.mbs), ("--gbs", lay.gbs),
                    ("--nodes", nodes)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise ValueError(f"{flag} {v}: give a positive integer")


def predict_model(cfg: LlamaConfig, lay: Layout, hw: Hardware, nodes: int) -> dict:
    """The prediction of one configuration (module doc); the JSON of ``python -m npudist.plan model``."""
    check_positive(lay, nodes)
    check_layout(cfg, lay.tp, lay.pp, lay.vpp_layers, lay.num_layer_list)
    if lay.sequence_parallel and lay.tp > 1 and cfg.seq % lay.tp:
        raise ValueError(f"--seq {cfg.seq} is not divisible by --tp {lay.tp}: --sequence-parallel splits the sequence "
                         f"over the TP ranks (Megatron requires it too); change --seq or --tp, or drop "
                         f"--sequence-parallel")
    npus = nodes * hw.devices_per_node
    if lay.npus != npus:
        raise ValueError(f"--tp {lay.tp} x --pp {lay.pp} x --dp {lay.dp} = {lay.npus} NPUs, but --nodes {nodes} of "
                         f"{hw.name} hold {npus}")
    if lay.gbs % (lay.mbs * lay.dp):
        raise ValueError(f"--gbs {lay.gbs} is not a multiple of --mbs {lay.mbs} x --dp {lay.dp}")
    if lay.overlap_param_gather and not lay.distributed_optimizer:
        raise ValueError("--overlap-param-gather needs --distributed-optimizer (as in Megatron)")
    if lay.recompute not in RECOMPUTE:
        raise ValueError(f"--recompute {lay.recompute!r}: use one of {', '.join(RECOMPUTE)}")
    if lay.tp > hw.devices_per_node:
        raise ValueError(f"--tp {lay.tp} spans nodes of {hw.devices_per_node}: keep TP inside a node")
    ensure_fake_world(max(hw.devices_per_node, lay.tp))
    pc = pieces(cfg, lay, hw)
    overlap = tp_comm_overlap(hw) if lay.mc2 else 0.0
    m = lay.gbs // (lay.mbs * lay.dp)
    stage_layers = lay.stage_layers(cfg.layers)
    v = stage_layers[0] // lay.vpp_layers if lay.vpp_layers else 1
    act_bytes = lay.mbs * cfg.seq * cfg.hidden * (2 if cfg.dtype in ("bfloat16", "float16") else 4) // lay.tp
    grad_b = 4 if cfg.dtype == "bfloat16" else 2  # Megatron's main gradients: fp32 under bf16
    param_b = 2
    stages = []
    for s in range(lay.pp):
        parts = [("layer", stage_layers[s])] + [("embedding", 1)] * (s == 0) + [("head", 1)] * (s == lay.pp - 1)
        fwd = sum(_hidden(pc[n].fwd_s, pc[n].fwd_tp_comm_s, overlap) * k for n, k in parts)
        bwd = sum(_hidden(pc[n].bwd_s, pc[n].bwd_tp_comm_s, overlap) * k for n, k in parts)
        flops = sum(pc[n].fwd_flops * k for n, k in parts)
        params = sum(pc[n].params * k for n, k in parts)
        # Megatron without gradient-accumulation fusion: each micro-batch's half-precision weight gradient
        # is added into the main-gradient buffer (read 2 + read/write main grad), a memory-bound pass
        bwd += params * (2 + 2 * grad_b) / hw.mem_bw
        p2p = 0.0
        if lay.pp > 1:
            nxt = _rank(lay, (s + 1) % lay.pp)
            p2p = 2 * v * collective_time(hw, "send", act_bytes, [_rank(lay, s), nxt], hw.devices_per_node)
        stages.append(dict(stage=s, fwd_s=fwd, bwd_s=bwd, p2p_s=p2p, t_s=fwd + bwd + p2p, fwd_flops=flops,
                           params=params, parts=parts))
    t_max = max(st["t_s"] for st in stages)
    t_sum = sum(st["t_s"] for st in stages)
    if lay.pp == 1:
        pipe = m * t_max
    elif v == 1:
        pipe = (m - 1) * t_max + t_sum
    else:
        pipe = m * t_max + (t_sum - t_max) / v
    # data parallel: gradients (and parameters with the distributed optimizer) over the DP group
    worst = max(stages, key=lambda st: st["params"])
    dp_ranks = [_rank(lay, worst["stage"], d) for d in range(lay.dp)]
    dp_comm = exposed = 0.0
    if lay.dp > 1:
        if lay.distributed_optimizer:
            rs = collective_time(hw, "reduce_scatter", worst["params"] * grad_b, dp_ranks, hw.devices_per_node)
            ag = collective_time(hw, "all_gather", worst["params"] * param_b, dp_ranks, hw.devices_per_node)
        else:
            rs = collective_time(hw, "all_reduce", worst["params"] * grad_b, dp_ranks, hw.devices_per_node)
            ag = 0.0
        dp_comm = rs + ag
        buckets = max(1, math.ceil(worst["params"] / max(BUCKET_PARAMS, 1_000_000 * lay.dp)))
        exposed_rs = max(rs / buckets, rs - worst["bwd_s"]) if lay.overlap_grad_reduce else rs
        # --overlap-param-gather: each bucket's all_gather runs ahead of the next step's forward, which waits
        # only for the first bucket and for what exceeds the first micro-batch's forward
        exposed_ag = max(ag / buckets, ag - worst["fwd_s"]) if lay.overlap_param_gather and ag else ag
        exposed = exposed_rs + exposed_ag
    # Adam: read grad, fp32 master, m, v; write master, m, v and the half-precision parameter (bytes/param)
    shard = worst["params"] / (lay.dp if lay.distributed_optimizer else 1)
    optimizer = shard * (4 + 12 + 12) / hw.mem_bw + worst["params"] * (grad_b + param_b) / hw.mem_bw
    step = pipe + exposed + optimizer
    tokens = lay.gbs * cfg.seq
    model_flops = 3 * sum(st["fwd_flops"] for st in stages) * lay.tp * lay.dp * m
    dtype = cfg.dtype
    mfu = model_flops / (step * hw.peak(dtype) * npus)
    # memory per stage
    opt_b = 12 / (lay.dp if lay.distributed_optimizer else 1)
    mems = []
    for st in stages:
        s = st["stage"]
        if v == 1:
            in_flight = min(m, lay.pp - s)
            layer_sets = in_flight * stage_layers[s]
        else:
            chunks = min(m * v, (lay.pp - s - 1) * 2 + (v - 1) * lay.pp + 1)
            in_flight = min(m, math.ceil(chunks / v))
            layer_sets = chunks * (stage_layers[s] // v)
        acts = layer_sets * pc["layer"].act_bytes
        if s == 0:
            acts += in_flight * pc["embedding"].act_bytes
        if s == lay.pp - 1:
            acts += (1 if v == 1 else in_flight) * pc["head"].act_bytes
        transient = max(pc[n].transient_bytes for n, _ in st["parts"])
        static = st["params"] * (param_b + grad_b + opt_b)
        mems.append(dict(stage=s, static_gib=static / GiB, activations_gib=acts / GiB,
                         transient_gib=transient / GiB, total_gib=(static + acts + transient) / GiB,
                         microbatches_in_flight=in_flight))
    peak = max(x["total_gib"] for x in mems)
    capacity = hw.capacity_bytes / GiB
    return {
        "tokens_per_s_per_npu": tokens / step / npus,
        "step_time_s": step,
        "peak_memory_gib": peak,
        "mfu": mfu,
        "fits": peak <= capacity,
        "capacity_gib": capacity,
        "hardware": hw.name,
        "npus": npus,
        "microbatches": m,
        "virtual_stages": v,
        "pipeline_s": pipe,
        "bubble_fraction": max(0.0, 1 - m * sum(st["t_s"] for st in stages) / lay.pp / pipe) if pipe else 0.0,
        "dp_comm_s": dp_comm,
        "dp_comm_exposed_s": exposed,
        "optimizer_s": optimizer,
        "model_flops_per_step": model_flops,
        "parameters": cfg.parameters(),
        "pieces": {n: dataclasses.asdict(p) for n, p in pc.items()},
        "stages": [{k: v for k, v in st.items() if k != "parts"} for st in stages],
        "memory_per_stage": mems,
        "config": dataclasses.asdict(cfg),
        "layout": dataclasses.asdict(lay),
    }
