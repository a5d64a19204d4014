"""run_on_ranks: a function of the test module runs on every rank (real processes, the hccl group
initialised by the harness), its return values come back per rank, an exception in one rank fails
the launch with that rank's traceback, and what the ranks cannot import is refused up front."""
import os

import pytest

from npudist.testing.multiproc import run_on_ranks


def _sum_on_rank(scale, *, offset=0.0):
    import torch
    import torch.distributed as dist

    from npudist.testing import rank

    x = torch.full((3,), float(rank.rank() + 1) * scale + offset, device="npu")
    dist.all_reduce(x)
    return {"rank": dist.get_rank(), "world": dist.get_world_size(), "sum": x.tolist(),
            "device": str(x.device), "threads": torch.get_num_threads(), "env_knob": os.environ.get("MY_KNOB")}


def _fail_on_rank_1():
    from npudist.testing import rank

    if rank.rank() == 1:
        raise RuntimeError("rank 1 refuses")
    return "fine"


def _no_group():
    import torch.distributed as dist

    return dist.is_initialized()


@pytest.mark.timeout(200)
def test_function_runs_on_every_rank_with_args_and_returns():
    r = run_on_ranks(_sum_on_rank, 3, 2.0, offset=1.0, env={"MY_KNOB": "k"}, timeout=150).check()
    values = r.values()
    # ranks hold 3, 5, 7 (= (r+1)*2+1): the all_reduce gives 15 everywhere
    assert [v["rank"] for v in values] == [0, 1, 2], r.explain()
    for rank, v in enumerate(values):
        assert v["world"] == 3 and v["sum"] == [15.0] * 3 and v["device"] == f"npu:{rank}", v
        assert v["threads"] == 1 and v["env_knob"] == "k", v


@pytest.mark.timeout(200)
def test_exception_in_one_rank_fails_with_its_traceback():
    r = run_on_ranks(_fail_on_rank_1, 2, backend=None, timeout=150)
    assert r.returncodes[0] == 0 and r.returncodes[1] == 1, r.explain()
    assert r.values() == ["fine", None]
    assert "RuntimeError: rank 1 refuses" in r.stderr[1]
    with pytest.raises(AssertionError, match="rank 1 refuses"):
        r.check()


@pytest.mark.timeout(200)
def test_backend_none_leaves_the_group_to_the_function():
    assert run_on_ranks(_no_group, 2, backend=None, timeout=150).check().values() == [False, False]


def test_functions_the_ranks_cannot_import_are_refused():
    with pytest.raises(ValueError, match="module-level function"):
        run_on_ranks(lambda: None, 2)

    def local():
        return None

    with pytest.raises(ValueError, match="module-level function"):
        run_on_ranks(local, 2)
