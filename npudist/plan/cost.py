"""Per-op costs for the replay: compute kernels, copies and collectives (docs/plan.md, "Method").

Compute (roofline with launch cost, as Calculon and vTrain model a kernel)::

    t = max(flops / (peak[dtype] * eff), (bytes_read + bytes_written) / mem_bw) * share + launch

A fused attention kernel (``npu::npu_fusion_attention`` and its ``_grad``) also has vector-unit work: the
online softmax runs per score element, whatever the head dimension d (:func:`attention_vector_time`)::

    t = max(flops / (peak * eff), vector_passes * score_elements * score_bytes / (vector_rate * eff),
            bytes / mem_bw) * share + launch

(the cube and vector units are separate cores that the kernel pipelines, so the slower one sets the time).

``eff`` is the hardware's sustained efficiency; for a GEMM it is also scaled by its tile and wave
quantisation: a (b x) M x N x K product runs b * ceil(M/tm) * ceil(N/tn) tiles in
waves = ceil(tiles / cores) waves, so the useful fraction of the work the cores do is
b*M*N*K / (waves * cores * tm * tn * ceil(K/tk)*tk) (:func:`gemm_efficiency`, at least
``min_efficiency``). ``share`` is how many devices compete for one compute resource.

Collectives (alpha-beta, nccl-tests' bus-bandwidth factors; S = the nccl-tests size: the larger of
input and output bytes, n = group size)::

    ring / bus:  all_reduce  lat + S * 2(n-1)/n / bw
                 all_gather, reduce_scatter, all_to_all  lat + S * (n-1)/n / bw
                 broadcast, reduce, send/recv  lat + S / bw
    full_mesh:   bw = link_bw * min(n-1, links_per_device) for the (n-1)/n and 2(n-1)/n volumes
                 (each device talks to all peers at once over its own links), link_bw for p2p
    all_to_all inside a node also pays local copies of S (read + write at mem_bw) on the same stream as
                 the transfer: HCCL's op-base all_to_all (buffers within HCCL_BUFFSIZE) copies the send
                 buffer into its CCL buffer, then its staged mesh writes into the receive buffer
                 (``all_to_all_copies``, 1); a 2-rank group runs HCCL's pairwise path, which also copies
                 the result out of the CCL buffer (``all_to_all_copies_two_ranks``, 2)
    across nodes (hierarchical): the intra-node phase on the local group plus the inter-node
                 phase on S / local at nic_bw with the inter-node latency (all_reduce: intra
                 reduce_scatter + inter all_reduce + intra all_gather)
"""
from __future__ import annotations

import math

from npudist.plan.hardware import Hardware

_GEMMS = {"aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm", "aten::_scaled_mm"}
_ALL_REDUCE = {"all_reduce", "allreduce", "allreduce_coalesced"}
_GATHER_LIKE = {"all_gather", "_allgather_base", "all_gather_into_tensor", "allgather", "allgather_into_tensor_coalesced",
                "reduce_scatter", "_reduce_scatter_base", "reduce_scatter_tensor", "reduce_scatter_tensor_coalesced",
                "alltoall", "alltoall_base", "all_to_all"}


def collective_kind(name: str) -> str:
    """A collective's family: "all_reduce", "all_gather", "reduce_scatter", "all_to_all", "p2p" or "rooted"."""
    n = name.lower()
    if n in _ALL_REDUCE or "all_reduce" in n or "allreduce" in n:
        return "all_reduce"
    if "gather" in n and "all" in n:
        return "all_gather"
    if "reduce_scatter" in n:
        return "reduce_scatter"
    if "alltoall" in n or "all_to_all" in n:
        return "all_to_all"
    if n in ("send", "recv", "recvanysource"):
        return "p2p"
    return "rooted"  # broadcast, reduce, gather, scatter, barrier


def gemm_mnk(op: dict) -> tuple[int, int, int, int] | None:
    """(batch, M, N, K) of a GEMM kernel from its input shapes, None for other ops."""
    name = op.get("name", "")
    if name not in _GEMMS:
        return None
    ins = [t for t in op.get("inputs", []) if isinstance(t, dict)]
    if name in ("aten::addmm", "aten::baddbmm"):
        ins = ins[1:]
    if len(ins) < 2:
        return None
    a, b = ins[0]["shape"], ins[1]["shape"]
    if len(a) == 2 and len(b) == 2:
        return 1, a[0], b[1], a[1]
    if len(a) == 3 and len(b) == 3:
        return a[0], a[1], b[2], a[2]
    return None


def gemm_efficiency(hw: Hardware, b: int, m: int, n: int, k: int) -> float:
    """Sustained efficiency of a (b x) M x N x K GEMM: efficiency x tile/wave utilisation, at least min_efficiency."""
    tm, tn, tk = hw.gemm_tile
    tiles = b * math.ceil(m / tm) * math.ceil(n / tn)
    waves = math.ceil(tiles / max(1, hw.cores))
    useful = b * m * n * k
    padded = waves * max(1, hw.cores) * tm * tn * math.ceil(k / tk) * tk
    util = useful / padded if padded else 1.0
    return max(hw.min_efficiency, hw.efficiency * util)


def compute_time(hw: Hardware, op: dict, share: float = 1.0) -> float:
    """Seconds one device spends on a kernel/copy/graph item of a step trace (module doc)."""
    kind = op.get("kind")
    if kind == "memcpy":
        bw = hw.mem_bw if op.get("direction") == "DtoD" else hw.host_link_bw
        return op.get("bytes", 0) / bw * share + hw.launch_s
    if kind == "graph":
        return op.get("nodes", 0) * hw.launch_s
    flops = float(op.get("flops", 0))
    bytes_ = float(op.get("bytes_read", 0) + op.get("bytes_written", 0))
    dtype = _compute_dtype(op)
    eff = hw.efficiency
    mnk = gemm_mnk(op)
    if mnk is not None:
        eff = gemm_efficiency(hw, *mnk)
    t_flops = flops / (hw.peak(dtype) * eff) if flops else 0.0
    t_bytes = bytes_ / hw.mem_bw
    t_vector = attention_vector_time(hw, op)
    return max(t_flops, t_vector, t_bytes) * share + hw.launch_s


_ATTENTION = {"npu::npu_fusion_attention": "forward", "npu::npu_fusion_attention_grad": "backward"}


def attention_head_dim(op: dict) -> int | None:
    """The head dimension of a fused attention op of a trace (its query's shape, layout and head_num), or None."""
    ins, conc = op.get("inputs", []), op.get("concrete", [])
    q = ins[0] if ins and isinstance(ins[0], dict) else None
    layout = next((c for c in conc if c in ("SBH", "BSH", "BSND", "BNSD", "TND")), None)
    if q is None or layout is None:
        return None
    if layout in ("BSND", "BNSD", "TND"):
        return int(q["shape"][-1])
    heads = conc[conc.index(layout) - 1]  # head_num precedes input_layout in both schemas
    return int(q["shape"][-1]) // int(heads) if isinstance(heads, int) and heads > 0 else None


def attention_vector_time(hw: Hardware, op: dict) -> float:
    """Seconds the vector units of one device spend on a fused attention op's softmax (0 for other ops, or
    when the hardware file gives no vector units).

    Score elements = the forward's FLOPs / (4 d) (the kernel's two GEMMs, causal blocks skipped; the
    backward's FLOPs are 2.5x the forward's). Passes per score element: forward ``forward_passes +
    exp_passes + 2 d / kv_block`` (the last: rescaling and accumulating the d-wide output once per key/value
    block), backward ``backward_passes + exp_passes``; each pass moves ``score_bytes`` per element through
    the vector units at ``vector_rate() * efficiency`` (docs/plan.md, "Ascend hardware")."""
    direction = _ATTENTION.get(op.get("name", ""))
    rate = hw.vector_rate()
    if direction is None or rate <= 0 or not op.get("flops"):
        return 0.0
    d = attention_head_dim(op)
    if not d:
        return 0.0
    a = hw.attention
    fwd_flops = float(op["flops"]) / (2.5 if direction == "backward" else 1.0)
    elements = fwd_flops / (4 * d)
    if direction == "forward":
        passes = a["forward_passes"] + a["exp_passes"] + 2 * d / a["kv_block"]
    else:
        passes = a["backward_passes"] + a["exp_passes"]
    return elements * passes * a["score_bytes"] / (rate * hw.efficiency)


def _compute_dtype(op: dict) -> str:
    for t in op.get("inputs", []):
        if isinstance(t, dict) and t.get("dtype", "").startswith(("float", "bfloat")):
            return t["dtype"]
    return "float32"


def collective_time(hw: Hardware, name: str, nbytes: int, group_ranks: list[int], devices_per_node: int | None = None
                    ) -> float:
    """Seconds of one collective of nccl-tests size ``nbytes`` over ``group_ranks`` (global ranks; ranks
    r and r' are on one node when r // devices_per_node == r' // devices_per_node)."""
    per_node = devices_per_node or hw.devices_per_node
    n = len(group_ranks)
    kind = collective_kind(name)
    if n <= 1 and kind != "p2p":
        return 0.0
    nodes = len({r // per_node for r in group_ranks})
    if nodes <= 1:
        return _intra(hw, kind, nbytes, n)
    local = max(1, n // nodes)
    if hw.nic_bw <= 0:  # a missing [inter_node] would otherwise price the inter-node traffic at nothing sensible
        raise ValueError(f"{hw.source or hw.name}: [inter_node] needs nic_gbps > 0: this {name} spans {nodes} "
                         f"nodes of {per_node} devices (docs/plan.md, 'Hardware file')")
    inter_bw = hw.nic_bw * local
    if kind == "p2p":
        return hw.inter_latency_s + nbytes / hw.nic_bw
    if kind == "all_reduce":
        return (_intra(hw, "reduce_scatter", nbytes, local) + _intra(hw, "all_gather", nbytes, local)
                + hw.inter_latency_s + nbytes * 2 * (nodes - 1) / nodes / inter_bw)
    if kind in ("all_gather", "reduce_scatter", "all_to_all"):
        return _intra(hw, kind, nbytes, local) + hw.inter_latency_s + nbytes * (nodes - 1) / nodes / inter_bw
    return _intra(hw, kind, nbytes, local) + hw.inter_latency_s + nbytes / inter_bw


def _intra(hw: Hardware, kind: str, nbytes: int, n: int) -> float:
    lat = hw.intra_latency(kind)
    if n <= 1:
        return lat if kind == "p2p" else 0.0
    if kind == "all_reduce":
        volume = nbytes * 2 * (n - 1) / n
    elif kind in ("all_gather", "reduce_scatter", "all_to_all"):
        volume = nbytes * (n - 1) / n
    else:
        volume = nbytes
    copy = 0.0
    if kind == "all_to_all":  # HCCL copies the send buffer into its own buffer first, on the same stream (module doc)
        copies = hw.all_to_all_copies_two_ranks if n == 2 else hw.all_to_all_copies
        copy = copies * 2 * nbytes / hw.mem_bw
    if hw.topology == "bus":
        bw = hw.bus_bw
    elif hw.topology == "full_mesh" and kind != "p2p" and kind != "rooted":
        bw = hw.link_bw * min(n - 1, hw.links_per_device)
    else:
        bw = hw.link_bw
    return lat + copy + volume / bw
