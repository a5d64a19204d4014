"""A soak of random interleaved collectives, and the shared segment's
lifecycle (mode 0600, unlinked once mapped, nothing left after exit)."""
import os
import uuid

import pytest

from npudist import _shm_names

from . import launch


def _soak(nranks, iters, seed):
    r = launch("soak.py", nranks, [iters, seed], env={"HCCL_BUFFSIZE": "1"}, timeout=1500)
    assert r.returncodes == [0] * nranks, r.explain()
    for rank in range(nranks):
        res = r.results(rank)[-1]
        assert res["nfail"] == 0, "\n".join(res["failures"])
        assert res["checks"] > iters // 2


@pytest.mark.timeout(300)
def test_soak_short():
    _soak(3, 120, 11)


@pytest.mark.slow
@pytest.mark.timeout(1800)
@pytest.mark.parametrize("nranks,seed", [(2, 21), (4, 22)])
def test_soak_long(nranks, seed):
    _soak(nranks, 2500, seed)


@pytest.mark.timeout(120)
@pytest.mark.parametrize("long_tag", [False, True], ids=["tag12", "tag64"])
def test_segment_mode_unlinked_and_cleaned(long_tag):
    # A 64-character tag (npurun's limit) is named by the rule npurun's cleanup applies.
    tag = "life" + uuid.uuid4().hex[:8] + ("L" * 52 if long_tag else "")
    r = launch("lifecycle.py", 2, env={"NPUDIST_JOB_TAG": tag}, timeout=90)
    assert r.returncodes == [0, 0], r.explain()
    for rank in range(2):
        res = r.results(rank)[-1]
        assert res["mapped"] >= 1 and res["deleted"], res
        assert set(res["modes"]) == {"0o600"}, res
        assert res["listed"] == []
    assert [n for n in os.listdir("/dev/shm") if n.startswith(_shm_names.job_prefix(tag))] == []


@pytest.mark.timeout(120)
def test_detail_debug_catches_cross_host_mismatch():
    tag = "dbg" + uuid.uuid4().hex[:8]
    r = launch("lifecycle.py", 2, env={"NPUDIST_JOB_TAG": tag, "TORCH_DISTRIBUTED_DEBUG": "DETAIL"},
               hosts=["hA", "hB"], timeout=90)
    for rank in range(2):
        res = r.results(rank)[-1]
        err = res["error"] or ""
        assert "Detected mismatch between collectives" in err and "TensorShape=[4]" in err, res


@pytest.mark.timeout(120)
def test_collectives_overlap_compute():
    """async_op=True and side-stream collectives complete while the issuing
    thread computes (nobody waits for them), as on CUDA."""
    r = launch("overlap.py", 2, timeout=100)
    assert r.returncodes == [0, 0], r.explain()
    for rank in range(2):
        res = r.results(rank)[-1]
        assert res["nfail"] == 0, res["failures"]
        assert res["done_async"] and res["done_side"], res
