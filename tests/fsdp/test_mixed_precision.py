"""The flagship's --mp bf16 is really bf16: FSDP2's all-gathers move bf16 parameters and its
reduce-scatters fp32 gradients (read from the hccl flight recorder), forward sees bf16 weights."""
import pytest

from . import launch


@pytest.mark.timeout(240)
def test_fsdp2_bf16_policy_moves_bf16():
    r = launch("mp_dtypes.py", 2, timeout=200)
    assert r.returncodes == [0, 0], r.explain()
    for rank in range(2):
        (res,) = r.results(rank)
        assert res["failures"] == [], "\n".join(res["failures"])
        assert res["checks"] >= 14, res
