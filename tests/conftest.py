"""Shared test setup: the --full flag, and a helper to run a code snippet as its own process."""
import os
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


def run_python(code, env=None, timeout=120, cwd=None, args=(), fresh=False):
    """Runs ``code`` (dedented) as ``python -c code *args`` under the harness's one environment
    policy (npudist.testing.multiproc.clean_env: no inherited NPUDIST_/HCCL_/ASCEND_/torchrun
    variables, the repository on PYTHONPATH) plus ``env``; returns the CompletedProcess (text mode).

    Forked from the warm test zygote (torch already imported) unless ``fresh`` is True or ``env``
    sets an import-time variable (see npudist.testing.multiproc.run_python): pass ``fresh=True``
    where the code's point is a new interpreter (import order, what ``sys.modules`` holds, a
    module made unimportable before torch loads it)."""
    from npudist.testing.multiproc import run_python as _run

    return _run(["-c", textwrap.dedent(code), *args], env=env, timeout=timeout, cwd=cwd or REPO, fresh=fresh)


@pytest.fixture
def python():
    return run_python
