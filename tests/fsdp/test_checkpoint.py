"""torch.distributed.checkpoint with FSDP2 on npu: sharded save (dcp.save, and dcp.async_save
on npudist.fsdp.checkpoint_process_group()), round trip on the same ranks, and loading on a
different number of ranks (resharding), checked value by value and by the next step's loss."""
import pytest

from . import launch


def _ok(r, n):
    assert r.returncodes == [0] * n, r.explain()
    for rank in range(n):
        (res,) = r.results(rank)
        assert res["failures"] == [], "\n".join(res["failures"])
        assert res["checks"] >= 5, res


@pytest.mark.timeout(400)
def test_save_on_4_load_on_2(tmp_path):
    _ok(launch("dcp.py", 4, args=["save", tmp_path], timeout=180), 4)
    _ok(launch("dcp.py", 2, args=["load", tmp_path], timeout=180), 2)


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_save_on_2_load_on_4_and_3(tmp_path):
    _ok(launch("dcp.py", 2, args=["save", tmp_path], timeout=180), 2)
    _ok(launch("dcp.py", 4, args=["load", tmp_path], timeout=180), 4)
    # 3 ranks: uneven shards (FSDP2 pads dim 0)
    _ok(launch("dcp.py", 3, args=["load", tmp_path], timeout=180), 3)
