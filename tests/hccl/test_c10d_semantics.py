"""c10d semantics that PyTorch's distributed suite checks, on 2 and 3 ranks:
all_gather_coalesced in c10d's layout, recv from any source (tags, irecv, npu, sizes
above a chunk), and the behaviours the suite runs only for BACKEND == "gloo"
(all_reduce_coalesced ops, also on a group of some ranks, object collectives, get_future
chains, batch_isend_irecv with tags, a group's timeout, DDP gradient accumulation under
no_sync with and without comm hooks and gradient_as_bucket_view, on cpu and npu). Values are compared bitwise where the result is pure data
movement or a fixed-order reduction (tests/hccl/workers/c10d_semantics.py)."""
import pytest

from . import launch


@pytest.mark.timeout(600)
@pytest.mark.parametrize("nranks", [2, 3])
def test_c10d_semantics(nranks):
    r = launch("c10d_semantics.py", nranks, timeout=540)
    assert r.returncodes == [0] * nranks, r.explain()
    for i in range(nranks):
        res = r.results(i)[-1]
        assert res["checks"] > 400, res
        assert res["nfail"] == 0, "\n".join(res["failures"])


@pytest.mark.timeout(300)
def test_recv_anysource_across_hosts():
    """Every rank on its own simulated host: recv without src is Gloo's recvAnysource."""
    r = launch("c10d_semantics.py", 3, ["remote"], hosts=["hA", "hB", "hC"], timeout=240)
    assert r.returncodes == [0] * 3, r.explain()
    for i in range(3):
        res = r.results(i)[-1]
        assert res["nfail"] == 0, res
    assert r.results(0)[-1]["checks"] >= 4 * 3, r.results(0)[-1]  # rank 0 receives and checks


@pytest.mark.timeout(200)
def test_ddp_records_npu_timings():
    # The reducer's timer for npu (c10d TimerRegistry, PrivateUse1; csrc/hccl/ddp_timer.cpp), as torch_npu
    # registers one: DDP's logging data has its timings and DDP does not warn that it cannot time npu.
    r = launch("ddp_timer.py", 2, timeout=150)
    assert r.returncodes == [0] * 2, r.explain()
    for rank in range(2):
        times = r.results(rank)[0]["times"]
        assert all(isinstance(v, int) and v > 0 for v in times.values()), times
        # a forward of this size takes well under a second of npu (host) time, in ns
        assert times["forward_compute_time"] < 10 ** 10, times
        assert times["backward_compute_time"] >= times["backward_compute_comm_overlap_time"] >= 0, times
    for err in r.stderr:
        assert "Time stats are currently only collected" not in err, err[-3000:]


@pytest.mark.timeout(200)
def test_public_set_timeout_reaches_hccl():
    r = launch("set_timeout.py", 2, timeout=150)
    assert r.returncodes == [0] * 2, r.explain()
    res = r.results(0)[0]
    # torch 2.13's _set_pg_timeout passes timeouts to NCCL and Gloo only (docs/collectives.md, "Timeouts")
    assert any("only supported for either nccl or gloo" in w for w in res["private_warnings"]), res
    assert res["error"] is not None and "collective timeout" in res["error"], res
    assert "group.set_timeout(...)" in res["error"], res  # the timeout error names the public way to change it
    assert res["seconds"] < 60, res  # the lowered 3 s, not the 120 s the group began with
