"""The npu fused ops on DTensors (2 ranks, npu mesh over hccl): for every placement their sharding
strategies offer, outputs and gradients equal the unsharded op's, and sharded inputs stay sharded."""
import pytest

from . import run_worker


@pytest.mark.timeout(500)
def test_fused_ops_sharded_match_unsharded():
    _, results = run_worker("fused_sharded.py", 2)
    assert results[-1]["checks"] >= 150


@pytest.mark.timeout(300)
def test_dtensor_basics_on_npu_mesh():
    """distribute_tensor, full_tensor, redistribute (Shard/Replicate/Partial), from_local/to_local, RNG."""
    _, results = run_worker("basics.py", 2)
    print([r for r in results if r.get("kind") == "rng"])
