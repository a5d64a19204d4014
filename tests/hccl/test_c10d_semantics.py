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
