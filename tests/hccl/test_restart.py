"""An elastic restart after a failure mid-collective: the new attempt's hccl
groups must not pick up the old attempt's keys from the agent's store."""
import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))


@pytest.mark.timeout(240)
def test_restart_after_failure_mid_collective():
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NPUDIST_", "TORCH_HCCL_", "HCCL_"))}
    env["PYTHONPATH"] = REPO
    p = subprocess.run([sys.executable, "-m", "npurun", "--nproc", "2", "--max-restarts", "1",
                        os.path.join(HERE, "workers", "restart.py")], env=env, capture_output=True, text=True,
                       timeout=200, cwd=REPO)
    out = p.stdout + p.stderr
    assert p.returncode == 0, out
    assert "[rank0]: attempt 1 ok 4.0" in out and "[rank1]: attempt 1 ok 4.0" in out, out
