"""2 ranks: collectives captured in a graph replay in order on every rank,
with new sequence numbers, interleaved with eager collectives."""
import os

import pytest

from npudist.testing.multiproc import launch

pytestmark = pytest.mark.timeout(400)

WORKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "workers", "collectives.py")


def test_two_rank_collectives_in_graph():
    r = launch(WORKER, 2, env={"TORCH_HCCL_ASYNC_ERROR_HANDLING": "0"}, timeout=300)
    assert r.ok(), r.explain()
    for rank in range(2):
        (res,) = r.results(rank)
        assert res["seq_after_capture"] == 0, res  # capture leaves no in-flight work
        assert res["captured_untouched"], res
        assert res["replays_ok"] == [True, True, True], res
        # Each iteration: one eager all_reduce + three replayed collectives, each numbered anew.
        assert res["seq_steps"] == [4, 4], res
