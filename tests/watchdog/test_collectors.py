"""Collectors and the training-loop API, in one process: what each series is named, labelled
and worth, from known inputs."""
import math

import pytest
import torch
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

import npudist.watchdog.metrics as metrics
from npudist.watchdog.metrics import families
from npudist.watchdog.metrics.hccl_collector import HcclCollector
from npudist.watchdog.metrics.process_collector import ProcessCollector
from npudist.watchdog.metrics.steps import StepStats
from npudist.watchdog.metrics.train_collector import TrainCollector


def scrape(*collectors):
    """{(sample name, frozenset(labels)): value} after a real exposition round trip."""
    reg = CollectorRegistry(auto_describe=False)
    for c in collectors:
        reg.register(c)
    text = generate_latest(reg).decode()
    out, types = {}, {}
    for fam in text_string_to_metric_families(text):
        types[fam.name] = fam.type
        for s in fam.samples:
            out[(s.name, frozenset(s.labels.items()))] = s.value
    return out, types


def one(samples, name, **labels):
    hits = [v for (n, ls), v in samples.items() if n == name and all((k, str(x)) in ls for k, x in labels.items())]
    assert len(hits) == 1, f"{name}{labels}: {len(hits)} samples in {sorted({n for n, _ in samples})}"
    return hits[0]


@pytest.fixture
def rank_env(monkeypatch):
    monkeypatch.setenv("RANK", "3")
    monkeypatch.setenv("LOCAL_RANK", "1")
    monkeypatch.setenv("NPUDIST_HOSTNAME", "hostA")


def test_record_step_series(rank_env):
    stats = StepStats()
    for t, n in [(0.001, 10), (0.2, 100), (0.2, 100), (700.0, 5)]:
        stats.record(t, n)
    samples, types = scrape(TrainCollector(stats))
    lab = dict(rank=3, local_rank=1, host="hostA")
    assert types["npudist_train_steps"] == "counter" and types["npudist_train_step_seconds"] == "histogram"
    assert one(samples, "npudist_train_steps_total", **lab) == 4
    assert one(samples, "npudist_train_tokens_total", **lab) == 215
    assert one(samples, "npudist_train_step_seconds_count", **lab) == 4
    assert one(samples, "npudist_train_step_seconds_sum", **lab) == pytest.approx(700.401)
    # "le" buckets are cumulative and inclusive: 0.001 falls into le=0.001
    assert one(samples, "npudist_train_step_seconds_bucket", le="0.001", **lab) == 1
    assert one(samples, "npudist_train_step_seconds_bucket", le="0.1", **lab) == 1
    assert one(samples, "npudist_train_step_seconds_bucket", le="0.25", **lab) == 3
    assert one(samples, "npudist_train_step_seconds_bucket", le="600.0", **lab) == 3
    assert one(samples, "npudist_train_step_seconds_bucket", le="+Inf", **lab) == 4
    assert one(samples, "npudist_train_last_step_seconds", **lab) == 700.0
    assert one(samples, "npudist_train_tokens_per_second", **lab) == pytest.approx(5 / 700.0)


def test_record_step_nothing_before_first_step():
    samples, _ = scrape(TrainCollector(StepStats()))
    assert samples == {}


@pytest.mark.parametrize("args, error, words", [
    ((-1.0, 5), ValueError, "step_time_s"), ((float("nan"), 5), ValueError, "finite"),
    ((math.inf, 5), ValueError, "finite"), ((0.1, -2), ValueError, "tokens must be >= 0"),
    (("fast", 5), TypeError, "number of seconds"), ((0.1, 2.5), TypeError, "tokens must be an int"),
    ((0.1, True), TypeError, "tokens must be an int"),
])
def test_record_step_rejects(args, error, words):
    with pytest.raises(error, match=words):
        StepStats().record(*args)


def test_record_step_public_api_accepts_tensor_ints():
    before = metrics.steps.STATS.snapshot()["steps"]
    metrics.record_step(0.01, torch.tensor(7))
    assert metrics.steps.STATS.snapshot()["steps"] == before + 1


def test_cumulative_buckets():
    assert families.cumulative_buckets([1e-6, 1e-3, 1.0], [2, 0, 3, 1]) == [
        ("1e-06", 2), ("0.001", 2), ("1.0", 5), ("+Inf", 6)]
    with pytest.raises(ValueError, match="3 bucket counts for 3 bounds"):
        families.cumulative_buckets([1, 2, 3], [1, 2, 3])


def _stats(bounds):
    ops = {
        "all_reduce": {"started": 5, "completed": 4, "failed": 1, "bytes": 4 * 4096, "bus_bytes": 4 * 4096,
                       "seconds_sum": 0.002, "latency_buckets": [0, 1, 3] + [0] * (len(bounds) - 2)},
        "broadcast": {"started": 2, "completed": 2, "failed": 0, "bytes": 200, "bus_bytes": 200,
                      "seconds_sum": 0.0, "latency_buckets": [2] + [0] * len(bounds)},
    }
    return {"latency_buckets_s": bounds, "watchdog_heartbeat_age_s": 0.05, "flight_recorder_entries": 9,
            "groups": [{"group": "0", "desc": "default_pg", "rank": 3, "size": 4, "ops": ops, "in_flight": 1,
                        "oldest_in_flight_age_s": 0.5, "timeouts": 2, "mismatches": 1, "straggler_score_s": 0.125},
                       {"group": "1", "desc": "undefined", "rank": 0, "size": 2, "ops": {}, "in_flight": 0,
                        "oldest_in_flight_age_s": 0.0, "timeouts": 0, "mismatches": 0, "straggler_score_s": 0.0}]}


def test_hccl_collector_conversion(rank_env):
    """The conversion of a stats snapshot (the C++ interface's schema) into Prometheus series."""
    bounds = [1e-6, 1e-5, 1e-4, 1e-3, 1e-2]
    samples, types = scrape(HcclCollector(source=lambda: _stats(bounds)))
    lab = dict(rank=3, local_rank=1, host="hostA", pg="0", pg_desc="default_pg")
    assert one(samples, "npudist_hccl_collectives_started_total", op="all_reduce", **lab) == 5
    assert one(samples, "npudist_hccl_collectives_completed_total", op="all_reduce", **lab) == 4
    assert one(samples, "npudist_hccl_collectives_failed_total", op="all_reduce", **lab) == 1
    assert one(samples, "npudist_hccl_bytes_total", op="all_reduce", **lab) == 16384
    assert one(samples, "npudist_hccl_bus_bytes_total", op="broadcast", **lab) == 200
    assert one(samples, "npudist_hccl_collective_latency_seconds_bucket", op="all_reduce", le="1e-06", **lab) == 0
    assert one(samples, "npudist_hccl_collective_latency_seconds_bucket", op="all_reduce", le="1e-05", **lab) == 1
    assert one(samples, "npudist_hccl_collective_latency_seconds_bucket", op="all_reduce", le="0.0001", **lab) == 4
    assert one(samples, "npudist_hccl_collective_latency_seconds_bucket", op="all_reduce", le="+Inf", **lab) == 4
    assert one(samples, "npudist_hccl_collective_latency_seconds_count", op="all_reduce", **lab) == 4
    assert one(samples, "npudist_hccl_collective_latency_seconds_sum", op="all_reduce", **lab) == 0.002
    assert one(samples, "npudist_hccl_bus_bandwidth_bytes_per_second", op="all_reduce", **lab) == 16384 / 0.002
    assert one(samples, "npudist_hccl_bus_bandwidth_bytes_per_second", op="broadcast", **lab) == 0.0
    assert one(samples, "npudist_hccl_collectives_in_flight", **lab) == 1
    assert one(samples, "npudist_hccl_oldest_in_flight_age_seconds", **lab) == 0.5
    assert one(samples, "npudist_hccl_timeouts_total", **lab) == 2
    assert one(samples, "npudist_hccl_mismatches_total", **lab) == 1
    assert one(samples, "npudist_hccl_straggler_score_seconds", **lab) == 0.125
    assert one(samples, "npudist_hccl_group_info", group_rank=3, group_size=4, **lab) == 1
    assert one(samples, "npudist_hccl_group_info", pg="1", group_size=2) == 1
    assert one(samples, "npudist_hccl_watchdog_heartbeat_age_seconds", rank=3) == 0.05
    assert one(samples, "npudist_hccl_flight_recorder_entries", rank=3) == 9
    assert types["npudist_hccl_timeouts"] == "counter" and types["npudist_hccl_collectives_in_flight"] == "gauge"
    assert types["npudist_hccl_collective_latency_seconds"] == "histogram"


def test_hccl_collector_without_groups_or_watchdog():
    stats = {"latency_buckets_s": [1e-6], "watchdog_heartbeat_age_s": None, "flight_recorder_entries": 0,
             "groups": []}
    samples, _ = scrape(HcclCollector(source=lambda: stats))
    assert {n for n, _ in samples} == {"npudist_hccl_flight_recorder_entries"}


def test_hccl_collector_mismatched_bucket_lengths_fail_loudly():
    bad = _stats([1e-6, 1e-5])  # ops carry len(5 bounds)+1 counts
    bad["groups"][0]["ops"]["all_reduce"]["latency_buckets"] = [1, 2]
    with pytest.raises(ValueError, match="bucket counts"):
        list(HcclCollector(source=lambda: bad).collect())


def test_memory_and_process_collectors(python):
    """npu memory of a fresh process (allocations known), its CPU time and RSS."""
    r = python("""
        import os, torch
        from prometheus_client import generate_latest
        from prometheus_client.parser import text_string_to_metric_families
        from npudist.watchdog.metrics.process_registry import build_registry
        reg = build_registry()
        before = {f.name for f in text_string_to_metric_families(generate_latest(reg).decode())}
        torch.npu.set_device(1)
        a = torch.empty(3 << 20, dtype=torch.uint8, device="npu")
        b = torch.empty(1 << 20, dtype=torch.uint8, device="npu"); del b
        vals = {}
        for f in text_string_to_metric_families(generate_latest(reg).decode()):
            for s in f.samples:
                vals[(s.name, s.labels.get("device"))] = (s.value, s.labels)
        print(sorted(before))
        print(repr(vals))
    """, env={"RANK": "5", "LOCAL_RANK": "1", "NPUDIST_HOSTNAME": "hB"})
    assert r.returncode == 0, r.stderr
    before_line, vals_line = r.stdout.strip().splitlines()[-2:]
    before = eval(before_line)
    assert not any(n.startswith("npudist_npu_memory") for n in before)  # npu untouched: nothing exported
    vals = eval(vals_line)
    alloc, labels = vals[("npudist_npu_memory_allocated_bytes", "npu:1")]
    assert labels == {"rank": "5", "local_rank": "1", "host": "hB", "device": "npu:1"}
    assert alloc == 3 << 20
    reserved = vals[("npudist_npu_memory_reserved_bytes", "npu:1")][0]
    assert reserved >= 4 << 20
    assert vals[("npudist_npu_memory_peak_allocated_bytes", "npu:1")][0] == 4 << 20
    assert vals[("npudist_npu_memory_fragmentation_ratio", "npu:1")][0] == pytest.approx(1 - alloc / reserved)
    assert vals[("npudist_npu_memory_ooms_total", "npu:1")][0] == 0
    assert ("npudist_npu_memory_allocated_bytes", "npu:0") not in vals  # npu:0 never used
    assert vals[("npudist_process_cpu_seconds_total", None)][0] > 0
    assert vals[("npudist_process_resident_memory_bytes", None)][0] > 50 << 20


def test_process_collector_in_process(rank_env):
    samples, types = scrape(ProcessCollector())
    assert types["npudist_process_cpu_seconds"] == "counter"
    assert one(samples, "npudist_process_cpu_seconds_total", rank=3, host="hostA") > 0


def test_memory_collector_quiet_before_npu_init(python):
    r = python("""
        from npudist.watchdog.metrics.memory_collector import MemoryCollector
        import torch
        print(list(MemoryCollector().collect()), torch.npu.is_initialized())
    """)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip().splitlines()[-1] == "[] False"
