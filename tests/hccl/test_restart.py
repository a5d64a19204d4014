"""An elastic restart after a failure mid-collective: the new attempt's hccl
groups must not pick up the old attempt's keys. npurun's default gives each
round a fresh store (keys without the attempt number: agents count attempts
each on their own); with torch's shared agent store
(TORCH_DISABLE_SHARE_RDZV_TCP_STORE=0) the keys carry TORCHELASTIC_RESTART_COUNT."""
import os

import pytest

from npudist.testing.npurun import run_npurun

HERE = os.path.dirname(os.path.abspath(__file__))


@pytest.mark.timeout(240)
@pytest.mark.parametrize("share", [None, "0"], ids=["fresh-store", "agent-store"])
def test_restart_after_failure_mid_collective(share):
    # npurun under the harness's one environment policy (npudist.testing.multiproc.clean_env)
    env = {"TORCH_DISABLE_SHARE_RDZV_TCP_STORE": share} if share else None
    p = run_npurun(["--nproc", "2", "--max-restarts", "1", os.path.join(HERE, "workers", "restart.py")], env=env,
                   timeout=200)
    out = p.stdout + p.stderr
    assert p.returncode == 0, out
    assert "[rank0]: attempt 1 ok 4.0" in out and "[rank1]: attempt 1 ok 4.0" in out, out
