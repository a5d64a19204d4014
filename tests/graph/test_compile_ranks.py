"""torch.compile on npu with hccl on 2 real ranks: stream order with a pending collective
(default tier); DDP with a compiled model and FSDP2 with per-block compile vs eager over 10
steps (full tier: compiles take minutes on 2 cores)."""
import pytest

from . import launch


def _run(cases, timeout):
    ranks = launch("compile_ranks.py", 2, args=cases, timeout=timeout)
    assert ranks.ok(), ranks.explain()
    for r in range(2):
        summary = ranks.summary(r)
        assert summary is not None and summary["checks"] > 0, ranks.explain()
        assert summary["nfail"] == 0, (summary["failures"], ranks.explain())
    return ranks


@pytest.mark.timeout(600)
def test_compiled_kernel_waits_for_pending_collective():
    _run(["stream"], timeout=540)


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_ddp_compiled_training_matches_eager():
    _run(["ddp"], timeout=1700)


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_fsdp2_per_block_compile_training_matches_eager():
    _run(["fsdp"], timeout=1700)
