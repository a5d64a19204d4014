"""An elastic restart after a failure mid-collective: the new attempt's hccl
groups must not pick up the old attempt's keys from the agent's store."""
import os

import pytest

from npudist.testing.npurun import run_npurun

HERE = os.path.dirname(os.path.abspath(__file__))


@pytest.mark.timeout(240)
def test_restart_after_failure_mid_collective():
    # npurun under the harness's one environment policy (npudist.testing.multiproc.clean_env)
    p = run_npurun(["--nproc", "2", "--max-restarts", "1", os.path.join(HERE, "workers", "restart.py")], timeout=200)
    out = p.stdout + p.stderr
    assert p.returncode == 0, out
    assert "[rank0]: attempt 1 ok 4.0" in out and "[rank1]: attempt 1 ok 4.0" in out, out
