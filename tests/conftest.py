"""Shared test setup: the --full flag, and a helper to run code in a fresh interpreter."""
import os
import subprocess
import sys
import textwrap

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def pytest_addoption(parser):
    parser.addoption("--full", action="store_true", help="also run slow tiers: soaks, fault matrices, full sweeps")


def pytest_collection_modifyitems(config, items):
    """Without --full, slow-tier tests are deselected (reported as "deselected")."""
    if config.getoption("--full"):
        return
    slow = [item for item in items if "slow" in item.keywords]
    if slow:
        config.hook.pytest_deselected(items=slow)
        items[:] = [item for item in items if "slow" not in item.keywords]


def run_python(code, env=None, timeout=120, cwd=None):
    """Runs ``code`` in a fresh interpreter under the harness's one environment policy
    (npudist.testing.multiproc.clean_env: no inherited NPUDIST_/HCCL_/ASCEND_/torchrun variables,
    the repository on PYTHONPATH) plus ``env``; returns the CompletedProcess (text mode)."""
    from npudist.testing.multiproc import clean_env

    full_env = clean_env(env)
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=full_env, capture_output=True,
                          text=True, timeout=timeout, cwd=cwd or REPO)


@pytest.fixture
def python():
    return run_python
