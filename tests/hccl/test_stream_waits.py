"""Stream-ordered waits (Work.wait() on npu tensors) on a 2-D mesh, interleaved as FSDP2 + TP do:
no deadlock when a thread holding the GIL waits on a stream for a collective that the group's
thread is finishing (docs/collectives.md, "Who releases a collective's tensors")."""
import pytest

from . import launch


@pytest.mark.timeout(150)
def test_stream_ordered_waits_with_gil_held_on_a_2d_mesh():
    r = launch("stream_waits.py", 4, env={"WORKER_HANG_DUMP_S": "60"}, timeout=90)
    assert r.returncodes == [0] * 4, r.explain()
    for rank in range(4):
        res = r.results(rank)[-1]
        assert res["nfail"] == 0, "\n".join(res["failures"])
        assert res["checks"] == 2 * res["steps"]


@pytest.mark.timeout(150)
def test_future_callback_with_stream_ordered_wait_and_gil_held():
    """A Python callback on the future (it takes the GIL) runs after the collective is done."""
    r = launch("future_callback_waits.py", 2, env={"WORKER_HANG_DUMP_S": "45"}, timeout=60)
    assert r.returncodes == [0] * 2, r.explain()
    for rank in range(2):
        res = r.results(rank)[-1]
        assert res["nfail"] == 0, "\n".join(res["failures"])
