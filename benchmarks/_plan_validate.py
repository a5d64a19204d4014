"""The predictor half of benchmarks/plan_validation.py: predicts its published rows with npudist.plan.

- collectives: the hardware file's predicted algorithm bandwidth (nccl-tests' S / t at a large message,
  where the published figures' plateau lies) of all_gather / all_reduce / all_to_all at 2, 4, 8 NPUs of
  one node, against COLLECTIVE_ROWS;
- calibration: at most two global factors, on CALIBRATION_ROWS only: ``[compute] efficiency`` from the
  LLaMA2-7B row (TP 1: no TP communication, so the second factor cannot move it), then
  ``[calibration] tp_comm_overlap`` (the fraction of TP collectives hidden behind their GEMMs: the README
  says MC2 was on) from the LLaMA2-13B row (TP 8) given the first; both by bisection;
- end to end: every CHECK_ROW predicted with ``npudist.plan.model`` (its layout, its stages' layers
  (``--num-layer-list``), dtype, distributed optimizer, overlap-grad-reduce and overlap-param-gather
  flags from the row), predicted / published, the mean absolute percentage error, Spearman's rank
  correlation and each row's predicted peak memory against 64 GiB;
- sensitivity: how far the check rows' predictions move when one unsourced value of the hardware file
  moves across its plausible range (docs/plan.md, "How far the assumptions move the predictions").

Predictions are deterministic (no measurement on this machine): a re-run gives the same figures.
"""
from __future__ import annotations

import copy
import statistics

from npudist.plan import hardware
from npudist.plan.cost import collective_time
from npudist.plan.llama import LlamaConfig
from npudist.plan.model import Layout, predict_model

COLLECTIVE_BYTES = 1 << 30  # 1 GiB messages: the bandwidth plateau


def set_factors(hw, efficiency: float, tp_comm_overlap: float):
    """A copy of ``hw`` with the two calibrated factors set."""
    hw = copy.copy(hw)
    hw.efficiency = efficiency
    hw.raw = dict(hw.raw, calibration=dict(hw.raw.get("calibration", {}), tp_comm_overlap=tp_comm_overlap))
    return hw


def collectives(hw, rows) -> list[dict]:
    """Predicted algbw (GB/s) for every published collective row, and predicted / published."""
    out = []
    for r in rows:
        t = collective_time(hw, r["op"], COLLECTIVE_BYTES, list(range(r["npus"])), hw.devices_per_node)
        pred = COLLECTIVE_BYTES / t / 1e9
        out.append(dict(source=r["source"], op=r["op"], npus=r["npus"], published_algbw_gbps=r["algbw_gbps"],
                        predicted_algbw_gbps=round(pred, 2), ratio=round(pred / r["algbw_gbps"], 3)))
    return out


def config(row) -> tuple[LlamaConfig, Layout]:
    """The row's model and layout as npudist.plan.model takes them."""
    cfg = LlamaConfig(hidden=row["hidden"], layers=row["layers"], heads=row["heads"], kv_heads=row["kv_heads"],
                      ffn=row["ffn"], vocab=row["vocab"], seq=row["seq"],
                      dtype={"bf16": "bfloat16", "fp16": "float16"}[row["dtype"]],
                      fused_rmsnorm="use-fused-rmsnorm" in row["flags"], fused_swiglu="use-fused-swiglu" in row["flags"],
                      fused_rope="use-fused-rotary-pos-emb" in row["flags"])
    rc = "none" if row["recompute"] is None else row["recompute"]["granularity"]
    lay = Layout(tp=row["tp"], pp=row["pp"], dp=row["dp"], mbs=row["mbs"], gbs=row["gbs"],
                 vpp_layers=row["vpp_layers"], sequence_parallel=row["sequence_parallel"], recompute=rc,
                 distributed_optimizer=row["distributed_optimizer"],
                 overlap_grad_reduce="overlap-grad-reduce" in row["flags"],
                 overlap_param_gather="overlap-param-gather" in row["flags"], mc2="use-mc2" in row["flags"],
                 num_layer_list=row["num_layer_list"])
    return cfg, lay


def predict_row(row, hw) -> dict:
    cfg, lay = config(row)
    return predict_model(cfg, lay, hw, row["nodes"])


def _bisect(f, lo, hi, target, iters=40):
    """x in [lo, hi] with f(x) = target for an increasing f (the nearest end when out of range)."""
    if f(hi) <= target:
        return hi
    if f(lo) >= target:
        return lo
    for _ in range(iters):
        mid = (lo + hi) / 2
        if f(mid) < target:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def calibrate(hw, rows) -> tuple[float, float]:
    """(efficiency, tp_comm_overlap) fitted to the two calibration rows (module doc)."""
    tp1 = next(r for r in rows if r["tp"] == 1)
    tpn = next(r for r in rows if r["tp"] > 1)
    eff = _bisect(lambda e: predict_row(tp1, set_factors(hw, e, 0.0))["tokens_per_s_per_npu"], 0.2, 1.0,
                  tp1["published_tokens_per_s_per_npu"])
    ov = _bisect(lambda o: predict_row(tpn, set_factors(hw, eff, o))["tokens_per_s_per_npu"], 0.0, 1.0,
                 tpn["published_tokens_per_s_per_npu"])
    return eff, ov


def spearman(x, y) -> float:
    """Spearman's rank correlation (average ranks for ties)."""
    def ranks(v):
        order = sorted(range(len(v)), key=lambda i: v[i])
        r = [0.0] * len(v)
        i = 0
        while i < len(v):
            j = i
            while j + 1 < len(v) and v[order[j + 1]] == v[order[i]]:
                j += 1
            for k in range(i, j + 1):
                r[order[k]] = (i + j) / 2 + 1
            i = j + 1
        return r
    rx, ry = ranks(x), ranks(y)
    mx, my = statistics.fmean(rx), statistics.fmean(ry)
    num = sum((a - mx) * (b - my) for a, b in zip(rx, ry, strict=True))
    den = (sum((a - mx) ** 2 for a in rx) * sum((b - my) ** 2 for b in ry)) ** 0.5
    return num / den if den else 0.0


def end_to_end(hw, rows) -> dict:
    """Every row predicted; per row predicted / published, peak memory; MAPE and Spearman over them."""
    out = []
    for r in rows:
        p = predict_row(r, hw)
        pub = r["published_tokens_per_s_per_npu"]
        out.append(dict(id=r["id"], cluster=r["cluster"], tp=r["tp"], pp=r["pp"], vpp_layers=r["vpp_layers"],
                        dp=r["dp"], mbs=r["mbs"], gbs=r["gbs"], published=pub,
                        predicted=round(p["tokens_per_s_per_npu"], 1),
                        ratio=round(p["tokens_per_s_per_npu"] / pub, 3), mfu=round(p["mfu"], 3),
                        peak_memory_gib=round(p["peak_memory_gib"], 2), fits_64_gib=p["peak_memory_gib"] <= 64.0,
                        bubble=round(p["bubble_fraction"], 3)))
    ape = [abs(x["ratio"] - 1) for x in out]
    return dict(rows=out, mape=statistics.fmean(ape) if ape else 0.0,
                spearman=spearman([x["predicted"] for x in out], [x["published"] for x in out]),
                all_fit=all(x["fits_64_gib"] for x in out), within_15=sum(a <= 0.15 for a in ape),
                within_10=sum(a <= 0.10 for a in ape))


# One unsourced value at a time across its plausible range (docs/plan.md, "Ascend hardware").
SENSITIVITY = [
    ("memory.bandwidth_gbps", "HBM bandwidth (GB/s)", (1300.0, 1600.0), lambda hw, v: setattr(hw, "mem_bw", v * 1e9)),
    ("intra_node.latency_us.default", "intra-node collective latency (us)", (10.0, 60.0),
     lambda hw, v: setattr(hw, "intra_latency_s", {"default": v * 1e-6})),
    ("compute.launch_us", "kernel launch (us)", (1.0, 10.0), lambda hw, v: setattr(hw, "launch_s", v * 1e-6)),
    ("compute.peak_tflops.float32", "fp32 peak (x fp16 peak)", (0.125, 0.5),
     lambda hw, v: setattr(hw, "peak_flops", dict(hw.peak_flops, float32=hw.peak_flops["bfloat16"] * v))),
    ("compute.vector_clock_mhz", "vector unit clock (MHz)", (1500.0, 1800.0),
     lambda hw, v: setattr(hw, "vector_clock_hz", v * 1e6)),
    ("compute.attention.exp_passes", "attention: passes per exp", (1.0, 4.0),
     lambda hw, v: setattr(hw, "attention", dict(hw.attention, exp_passes=v))),
    ("compute.attention.forward_passes", "attention: forward passes (exp apart)", (4.0, 6.0),
     lambda hw, v: setattr(hw, "attention", dict(hw.attention, forward_passes=v))),
    ("compute.attention.backward_passes", "attention: backward passes (exp apart)", (6.0, 8.0),
     lambda hw, v: setattr(hw, "attention", dict(hw.attention, backward_passes=v))),
    ("compute.attention.kv_block", "attention: key/value columns per output update", (128.0, 1024.0),
     lambda hw, v: setattr(hw, "attention", dict(hw.attention, kv_block=v))),
    ("compute.vector_cores", "attention: no vector term (cube FLOPs only, as before)", (0,),
     lambda hw, v: setattr(hw, "vector_cores", v)),
]


def sensitivity(hw, rows) -> list[dict]:
    """For each unsourced value: the check rows' predictions at both ends of its range relative to the
    shipped value's (mean and largest |change|), and the MAPE at each end (no re-calibration)."""
    base = {r["id"]: predict_row(r, hw)["tokens_per_s_per_npu"] for r in rows}
    out = []
    for key, what, ends, apply in SENSITIVITY:
        for v in ends:
            h = copy.copy(hw)
            apply(h, v)
            pred = {r["id"]: predict_row(r, h)["tokens_per_s_per_npu"] for r in rows}
            moves = [pred[i] / base[i] - 1 for i in base]
            mape = statistics.fmean(abs(pred[r["id"]] / r["published_tokens_per_s_per_npu"] - 1) for r in rows)
            out.append(dict(key=key, what=what, value=v, mean_change=statistics.fmean(moves),
                            max_abs_change=max(abs(m) for m in moves), mape=mape))
    return out


def hardware_for(name: str):
    return hardware.load(name)


def model_overlap(hw) -> float:
    from npudist.plan.model import tp_comm_overlap
    return tp_comm_overlap(hw)
