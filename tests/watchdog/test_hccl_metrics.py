"""The npudist_hccl_* series of real ranks: counts, bytes, latency buckets and groups match the
collectives the ranks ran; a slow rank has the higher straggler score; a size mismatch is
counted (2 processes on the hccl backend)."""
import os
import shutil
import tempfile

import pytest

import npudist
from npudist.testing.multiproc import launch

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
WORKER = os.path.join(REPO, "tests", "watchdog", "workers", "hccl_stats.py")



@pytest.fixture(autouse=True)
def _stats_built_in():
    assert hasattr(npudist._C, "_hccl_stats"), "npudist._C has no _hccl_stats: an old build; run ./run.sh build"


def _launch(nranks, timeout=240, worker=WORKER, env_extra=None):
    """Runs `worker` on `nranks` ranks of one simulated host "hostM"; returns each rank's first RESULT."""
    r = launch(worker, nranks, env=env_extra, hosts=["hostM"] * nranks, timeout=timeout)
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
        assert _value(s, "npudist_hccl_straggler_score_seconds", **lab) >= 0
        assert _value(s, "npudist_hccl_flight_recorder_entries", rank=rank) >= 7
        assert 0 <= _value(s, "npudist_hccl_watchdog_heartbeat_age_seconds", rank=rank) < 60
    # the slow rank (50 ms late at each of 5 collectives of the sub-group) has the higher straggler score
    score = [_value(res["samples"], "npudist_hccl_straggler_score_seconds", rank=r, pg_desc="metrics_sub")
             for r, res in enumerate(results)]
    assert score[1] > 0.002 and score[1] > score[0], score


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_hccl_timeout_is_counted():
    """Rank 1 never joins an all_reduce: rank 0's times out after the group's 3 s and is counted
    (TORCH_HCCL_ASYNC_ERROR_HANDLING=0 keeps the process alive to be scraped)."""
    worker = os.path.join(REPO, "tests", "watchdog", "workers", "hccl_timeout.py")
    dumps = tempfile.mkdtemp(prefix="npudist-metrics-fr-")  # the flight-recorder dumps of the timeout
    try:
        res = _launch(2, worker=worker, env_extra={"TORCH_HCCL_ASYNC_ERROR_HANDLING": "0",
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
