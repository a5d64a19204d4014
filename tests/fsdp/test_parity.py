"""FSDP2 (fully_shard) and DDP on npu + hccl match a single-process reference over a few steps:
fp32 and bf16 (param bfloat16, reduce float32) policies, meta-device init, reshard after forward
both ways, explicit prefetch, clip_grad_norm_ over DTensor gradients, HSDP on a 2x2 mesh
(4 ranks); DDP with small buckets and comm hooks, no_sync, find_unused_parameters,
static_graph (--full); and the torch.accelerator calls generic code makes."""
import pytest

from . import launch


def _check(r, nranks, min_checks):
    assert r.returncodes == [0] * nranks, r.explain()
    for rank in range(nranks):
        (res,) = r.results(rank)
        assert res["failures"] == [], "\n".join(res["failures"])
        assert res["checks"] >= min_checks, res


@pytest.mark.timeout(300)
@pytest.mark.parametrize("nranks", [2, 4])
def test_fsdp_ddp_parity(nranks):
    r = launch("parity.py", nranks, args=["fast"], timeout=240)
    _check(r, nranks, 30 if nranks == 2 else 50)


@pytest.mark.slow
@pytest.mark.timeout(400)
@pytest.mark.parametrize("nranks", [2, 4])
def test_fsdp_ddp_parity_full(nranks):
    r = launch("parity.py", nranks, args=["full"], timeout=340)
    _check(r, nranks, 80)
