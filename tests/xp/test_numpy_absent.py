"""npudist without NumPy (issue #41): only npudist.xp needs it."""
import pytest

from npudist.testing.multiproc import launch

WORKER = "tests/xp/workers/no_numpy.py"


@pytest.mark.timeout(300)
def test_npudist_runs_without_numpy_and_xp_says_it_needs_it():
    r = launch(WORKER, 2, timeout=240)
    assert r.ok(), r.explain()
    for rank in range(2):
        (res,) = r.results(rank)
        assert not res["numpy_loaded"] and not res["numpy_loaded_after"], res
        assert res["npu_op"] == 36.0
        assert res["all_reduce"] == [3.0] * 4, res
        assert res["fsdp_loss"] > 0, res
        err = res["xp_error"] or ""
        assert "npudist.xp needs NumPy" in err and "numpy>=2.4,<2.5" in err, res
