"""The npu fused ops on DTensors (2 ranks, npu mesh over hccl): for every placement their sharding
strategies offer, outputs and gradients equal the unsharded op's, and sharded inputs stay sharded."""
import pytest

from ._ranks import run_worker


@pytest.mark.timeout(500)
def test_fused_ops_sharded_match_unsharded():
    _, results = run_worker("fused_sharded.py", 2)
    assert results[-1]["checks"] >= 150
