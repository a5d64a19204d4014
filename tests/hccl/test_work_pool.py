"""Recycled Works of the latency path (csrc/hccl/work.h, WorkPool): a Work or a
future the user keeps is never reused under them (result, second wait, future value, error
and completion stay their collective's), values stay bitwise right through recycled Works,
and the group's counters count each collective once (tests/hccl/workers/work_pool.py)."""
import pytest

from . import launch


@pytest.mark.timeout(300)
def test_work_pool_lifetimes():
    r = launch("work_pool.py", 2, timeout=240)
    assert r.returncodes == [0, 0], r.explain()
    for i in range(2):
        res = r.results(i)[-1]
        assert res["nfail"] == 0, "\n".join(res["failures"])
        assert res["checks"] > 150, res
