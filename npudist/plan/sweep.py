"""``python -m npudist.plan sweep``: candidate layouts of one model on one cluster, fastest first (docs/plan.md).

The candidates are every (tp, pp, vpp, dp, mbs, recompute) that splits the model as Megatron requires
(npudist.plan.llama.check_layout), fills ``nodes`` x devices-per-node NPUs exactly, keeps TP inside a node
and divides the global batch (gbs a multiple of mbs x dp). Each is predicted by npudist.plan.model (one
capture per distinct (tp, mbs, recompute), reused across pp, vpp and dp), ranked by tokens/s per NPU,
those that fit first; those whose predicted peak is over the device's capacity follow, marked.
"""
from __future__ import annotations

from npudist.plan.hardware import Hardware
from npudist.plan.llama import LlamaConfig, check_layout
from npudist.plan.model import Layout, predict_model


def candidates(cfg: LlamaConfig, npus: int, per_node: int, gbs: int, *, tps=None, pps=None, mbss=(1, 2, 4),
               recomputes=("none", "selective", "full"), vpp=True, sequence_parallel=True,
               distributed_optimizer=True) -> list[Layout]:
    """The layouts the sweep predicts (module doc). ``vpp``: also try interleaved stages of 1 and 2
    virtual chunks per stage beyond the plain schedule (Megatron's interleaving needs pp > 2).
    ``sequence_parallel`` applies where TP > 1 and the TP size divides ``cfg.seq``. Raises ValueError for
    sizes that are not positive."""
    tps = tps or [t for t in (1, 2, 4, 8, 16) if t <= per_node]
    pps = pps or [p for p in range(1, cfg.layers + 1) if cfg.layers % p == 0]
    out = []
    if min(list(tps) + list(pps) + list(mbss) + [npus, per_node, gbs]) < 1:
        raise ValueError(f"sweep: sizes must be positive (tp {tps}, pp {pps}, mbs {mbss}, {npus} NPUs, gbs {gbs})")
    for tp in tps:
        for pp in pps:
            if npus % (tp * pp):
                continue
            dp = npus // (tp * pp)
            try:
                check_layout(cfg, tp, pp, None)
            except ValueError:
                continue
            # sequence parallelism splits the sequence over TP: off where --seq does not divide (Megatron)
            sp = sequence_parallel and tp > 1 and cfg.seq % tp == 0
            per_stage = cfg.layers // pp
            vpps = [None]
            if vpp and pp > 2:
                vpps += [per_stage // v for v in (2, 4) if per_stage % v == 0]
            for mbs in mbss:
                if gbs % (mbs * dp):
                    continue
                for rc in recomputes:
                    for vl in vpps:
                        out.append(Layout(tp=tp, pp=pp, dp=dp, mbs=mbs, gbs=gbs, vpp_layers=vl,
                                          sequence_parallel=sp, recompute=rc,
                                          distributed_optimizer=distributed_optimizer and dp > 1))
    return out


def sweep(cfg: LlamaConfig, hw: Hardware, nodes: int, gbs: int, **kw) -> list[dict]:
    """Predicts every candidate; rows in :func:`rank_rows`' order (those that fit, fastest first, then those that
    do not), each with the layout, step time, peak memory and ``fits``. Raises ValueError when no layout is possible."""
    lays = candidates(cfg, nodes * hw.devices_per_node, hw.devices_per_node, gbs, **kw)
    if not lays:
        raise ValueError(f"no layout splits this model over {nodes} x {hw.devices_per_node} NPUs with --gbs {gbs}")
    rows = []
    for lay in lays:
        r = predict_model(cfg, lay, hw, nodes)
        rows.append(dict(tp=lay.tp, pp=lay.pp, vpp_layers=lay.vpp_layers, dp=lay.dp, mbs=lay.mbs,
                         recompute=lay.recompute, tokens_per_s_per_npu=r["tokens_per_s_per_npu"],
                         step_time_s=r["step_time_s"], peak_memory_gib=r["peak_memory_gib"], mfu=r["mfu"],
                         fits=r["fits"]))
    return rank_rows(rows)


def rank_rows(rows: list[dict]) -> list[dict]:
    """The sweep's order: the layouts that fit, fastest first (tokens/s per NPU), then those that do not fit,
    fastest first, so that ``--top K`` shows layouts one can run (the fastest layouts are often the ones that
    do not fit: less sharding, larger micro-batches)."""
    return sorted(rows, key=lambda r: (not r["fits"], -r["tokens_per_s_per_npu"]))


def format_rows(rows: list[dict], top: int | None = None) -> str:
    """The sweep's table: rank, layout, tokens/s per NPU, step time, peak memory, MFU, and "DOES NOT FIT"."""
    head = ["#", "tp", "pp", "vpp_layers", "dp", "mbs", "recompute", "tokens/s/npu", "step s", "peak GiB", "mfu",
            "fits"]
    lines = [head]
    for i, r in enumerate(rows[:top] if top else rows, 1):
        lines.append([str(i), str(r["tp"]), str(r["pp"]), str(r["vpp_layers"] or "-"), str(r["dp"]), str(r["mbs"]),
                      r["recompute"], f"{r['tokens_per_s_per_npu']:.0f}", f"{r['step_time_s']:.2f}",
                      f"{r['peak_memory_gib']:.1f}", f"{r['mfu'] * 100:.1f} %",
                      "yes" if r["fits"] else "DOES NOT FIT"])
    widths = [max(len(x[i]) for x in lines) for i in range(len(head))]
    return "\n".join("  ".join(c.rjust(w) for c, w in zip(line, widths, strict=True)) for line in lines)
