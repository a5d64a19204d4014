"""The npudist_hccl_* series of real ranks: counts, bytes, latency buckets and groups match the
collectives the ranks ran; a slow rank has the higher straggler score; a size mismatch is
counted (2 processes on the hccl backend)."""

import json
import os
import shutil
import tempfile
import time
from datetime import timedelta

import pytest
import torch
import torch.distributed as dist
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

import npudist
from npudist.testing.multiproc import run_on_ranks
from npudist.watchdog import stragglers, watchdog_status
from npudist.watchdog.metrics import registry


def hccl_timeout_on_rank():
    """A rank of test_hccl_metrics' timeout case: rank 1 never joins an all_reduce, rank 0's times
    out (group timeout 3 s, TORCH_HCCL_ASYNC_ERROR_HANDLING=0 so the process lives on); rank 0
    prints its npudist_hccl_* samples after the error."""
    rank, local_rank = int(os.environ["RANK"]), int(os.environ["LOCAL_RANK"])
    torch.npu.set_device(local_rank)
    dist.init_process_group("hccl", timeout=timedelta(seconds=3))
    x = torch.ones(1024, device="npu")
    dist.all_reduce(x)
    torch.npu.synchronize()
    error = None
    if rank == 0:
        try:
            dist.all_reduce(x)
            torch.npu.synchronize()
        except Exception as e:
            error = f"{type(e).__name__}: {e}"
        time.sleep(0.5)
        text = generate_latest(registry()).decode()
        samples = [[s.name, s.labels, s.value] for fam in text_string_to_metric_families(text)
                   for s in fam.samples if s.name.startswith("npudist_hccl_")]
        print("RESULT " + json.dumps({"samples": samples, "error": error}), flush=True)
    else:
        time.sleep(8)  # never joins; stays alive past rank 0's timeout
    os._exit(0)  # the group is unusable after a timeout: no destroy_process_group


def hccl_stats_on_rank():
    """A rank of test_hccl_metrics: known collectives on hccl, a slow rank and a size mismatch in
    sub-groups, then its own metrics as JSON.

    Prints ``RESULT {"samples": [[name, labels, value], ...], "scrape_s": [...]}`` with every
    npudist_hccl_* sample of this rank's registry after the collectives completed."""
    rank, local_rank = int(os.environ["RANK"]), int(os.environ["LOCAL_RANK"])
    torch.npu.set_device(local_rank)
    dist.init_process_group("hccl")
    world = dist.get_world_size()
    x = torch.ones(4096, device="npu")  # 16 KiB
    for _ in range(3):
        dist.all_reduce(x)
    b = torch.zeros(100, device="npu")  # 400 B
    for _ in range(2):
        dist.broadcast(b, src=0)
    out = torch.empty(world * 256, device="npu")
    dist.all_gather_into_tensor(out, x[:256])
    sub = dist.new_group(list(range(world)), group_desc="metrics_sub")
    # a slow rank: rank 1 arrives 200 ms late at each of the 6 all_reduce of the sub-group, so it is
    # always the last to arrive there and the others are never charged
    for _ in range(6):
        if rank == 1:
            time.sleep(0.2)
        dist.all_reduce(x, group=sub)
    # a mismatch: the ranks disagree on the size (the group keeps working: docs/collectives.md)
    mm = dist.new_group(list(range(world)), group_desc="metrics_mismatch")
    mismatch_error = None
    try:
        dist.all_reduce(torch.ones(64 if rank == 0 else 32, device="npu"), group=mm)
        torch.npu.synchronize()
    except Exception as e:  # DistBackendError on every rank
        mismatch_error = f"{type(e).__name__}: {e}"
    torch.npu.synchronize()
    time.sleep(0.2)

    reg = registry()
    timings = []
    for _ in range(20):
        t0 = time.perf_counter()
        text = generate_latest(reg).decode()
        timings.append(time.perf_counter() - t0)
    samples = [[s.name, s.labels, s.value] for fam in text_string_to_metric_families(text)
               for s in fam.samples if s.name.startswith("npudist_hccl_")]
    print("RESULT " + json.dumps({"samples": samples, "scrape_s": timings, "mismatch_error": mismatch_error,
                                  "status": watchdog_status(), "stragglers": [g["desc"] for g in stragglers(0.002)]}),
          flush=True)
    dist.barrier()
    dist.destroy_process_group()


REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))



@pytest.fixture(autouse=True)
def _stats_built_in():
    assert hasattr(npudist._C, "_hccl_stats"), "npudist._C has no _hccl_stats: an old build; run ./run.sh build"


def _launch(nranks, timeout=240, fn=hccl_stats_on_rank, env_extra=None):
    """Runs `fn` on `nranks` ranks of one simulated host "hostM"; returns each rank's first RESULT."""
    r = run_on_ranks(fn, nranks, backend=None, env=env_extra, hosts=["hostM"] * nranks, timeout=timeout)
    assert r.ok(), r.explain()
    return [(r.results(rank) or [None])[0] for rank in range(nranks)]


def _value(samples, name, **labels):
    hits = [v for n, ls, v in samples if n == name and all(ls.get(k) == str(x) for k, x in labels.items())]
    assert len(hits) == 1, (name, labels, [(n, ls) for n, ls, _ in samples if n == name])
    return hits[0]


@pytest.mark.timeout(300)
def test_hccl_series_of_two_ranks():
    results = _launch(2)
    for rank, res in enumerate(results):
        s = res["samples"]
        info = {ls["pg_desc"]: ls for n, ls, _ in s if n == "npudist_hccl_group_info"}
        assert set(info) >= {"default_pg", "metrics_sub"}, info
        pg0, sub = info["default_pg"]["pg"], info["metrics_sub"]["pg"]
        assert pg0 != sub and info["default_pg"]["group_size"] == "2"
        assert info["default_pg"]["group_rank"] == str(rank)
        lab = dict(rank=rank, local_rank=rank, host="hostM", pg=pg0)
        ar = dict(lab, op="all_reduce")
        assert _value(s, "npudist_hccl_collectives_started_total", **ar) == 3
        assert _value(s, "npudist_hccl_collectives_completed_total", **ar) == 3
        assert _value(s, "npudist_hccl_collectives_failed_total", **ar) == 0
        assert _value(s, "npudist_hccl_bytes_total", **ar) == 3 * 16384
        assert _value(s, "npudist_hccl_bus_bytes_total", **ar) == 3 * 16384  # 2(n-1)/n = 1 for n = 2
        assert _value(s, "npudist_hccl_collective_latency_seconds_count", **ar) == 3
        assert _value(s, "npudist_hccl_collective_latency_seconds_bucket", le="+Inf", **ar) == 3
        assert _value(s, "npudist_hccl_collective_latency_seconds_sum", **ar) > 0
        buckets = sorted((float(ls["le"]), v) for n, ls, v in s
                         if n == "npudist_hccl_collective_latency_seconds_bucket" and ls["op"] == "all_reduce"
                         and ls["pg"] == pg0)
        assert buckets[0][0] == 1e-6  # buckets start at 1 us
        assert all(a[1] <= b[1] for a, b in zip(buckets, buckets[1:]))  # cumulative
        assert _value(s, "npudist_hccl_bus_bandwidth_bytes_per_second", **ar) > 0
        bc = dict(lab, op="broadcast")
        assert _value(s, "npudist_hccl_collectives_completed_total", **bc) == 2
        assert _value(s, "npudist_hccl_bytes_total", **bc) == 800
        ag = dict(lab, op="all_gather_into_tensor")
        assert _value(s, "npudist_hccl_collectives_completed_total", **ag) == 1
        assert _value(s, "npudist_hccl_collectives_completed_total", rank=rank, pg=sub, op="all_reduce") == 6
        # the size mismatch: raised, counted as a mismatch and a failed (never completed) all_reduce
        assert "ranks disagree" in res["mismatch_error"], res["mismatch_error"]
        mm = dict(rank=rank, pg_desc="metrics_mismatch")
        assert _value(s, "npudist_hccl_mismatches_total", **mm) == 1
        assert _value(s, "npudist_hccl_collectives_started_total", op="all_reduce", **mm) == 1
        assert _value(s, "npudist_hccl_collectives_failed_total", op="all_reduce", **mm) == 1
        assert _value(s, "npudist_hccl_collectives_completed_total", op="all_reduce", **mm) == 0
        assert _value(s, "npudist_hccl_mismatches_total", **lab) == 0
        for name in ("npudist_hccl_timeouts_total", "npudist_hccl_mismatches_total",
                     "npudist_hccl_collectives_in_flight", "npudist_hccl_oldest_in_flight_age_seconds"):
            assert _value(s, name, **lab) == 0, name
        assert _value(s, "npudist_hccl_flight_recorder_entries", rank=rank) >= 7
        assert 0 <= _value(s, "npudist_hccl_watchdog_heartbeat_age_seconds", rank=rank) < 60
        # watchdog_status() is the same snapshot from Python: equal to the exported series
        st = res["status"]
        assert st["flight_recorder_entries"] == _value(s, "npudist_hccl_flight_recorder_entries", rank=rank)
        by_desc = {g["desc"]: g for g in st["groups"]}
        assert set(by_desc) >= {"default_pg", "metrics_sub", "metrics_mismatch"}, by_desc
        for desc, g in by_desc.items():
            assert g["group"] == info.get(desc, {}).get("pg", g["group"]) and g["size"] == 2 and g["rank"] == rank
            for key, name in (("timeouts", "npudist_hccl_timeouts_total"),
                              ("in_flight", "npudist_hccl_collectives_in_flight"),
                              ("mismatches", "npudist_hccl_mismatches_total")):
                assert g[key] == _value(s, name, rank=rank, pg_desc=desc), (desc, key)
    # the slow rank (200 ms late at each of the 6 collectives of the sub-group) is the last to arrive at
    # every one of them: only it is charged (the score is a 0.05-weighted moving average of the others'
    # wait, about 0.05 * 0.2 * (1 + 0.95 + ... + 0.95**5) ~ 0.053 s), rank 0 never is (exactly 0)
    score = [_value(res["samples"], "npudist_hccl_straggler_score_seconds", rank=r, pg_desc="metrics_sub")
             for r, res in enumerate(results)]
    assert score[0] == 0.0 and score[1] > 0.02, score
    status_score = [next(g["straggler_score_s"] for g in res["status"]["groups"] if g["desc"] == "metrics_sub")
                    for res in results]
    assert status_score == score, (status_score, score)  # no collective of the group since the scrape
    assert "metrics_sub" in results[1]["stragglers"] and "metrics_sub" not in results[0]["stragglers"]


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_hccl_timeout_is_counted():
    """Rank 1 never joins an all_reduce: rank 0's times out after the group's 3 s and is counted
    (TORCH_HCCL_ASYNC_ERROR_HANDLING=0 keeps the process alive to be scraped)."""
    dumps = tempfile.mkdtemp(prefix="npudist-metrics-fr-")  # the flight-recorder dumps of the timeout
    try:
        res = _launch(2, fn=hccl_timeout_on_rank, env_extra={"TORCH_HCCL_ASYNC_ERROR_HANDLING": "0",
                                                   "TORCH_HCCL_DEBUG_INFO_TEMP_FILE": os.path.join(dumps, "trace_")})[0]
    finally:
        shutil.rmtree(dumps, ignore_errors=True)
    assert "timed out" in res["error"], res["error"]
    s = res["samples"]
    lab = dict(rank=0, pg_desc="default_pg")
    assert _value(s, "npudist_hccl_timeouts_total", **lab) == 1
    assert _value(s, "npudist_hccl_collectives_started_total", op="all_reduce", **lab) == 2
    assert _value(s, "npudist_hccl_collectives_completed_total", op="all_reduce", **lab) == 1
    assert _value(s, "npudist_hccl_collectives_failed_total", op="all_reduce", **lab) == 1
    assert _value(s, "npudist_hccl_collectives_in_flight", **lab) == 0
