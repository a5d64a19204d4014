"""Fixtures of the launcher tests (their helpers are in tests/launcher/__init__.py)."""
import os
import shutil

import pytest

from . import TMPDIR


def pytest_sessionfinish(session, exitstatus):
    shutil.rmtree(TMPDIR, ignore_errors=True)


@pytest.fixture
def shm_of():
    """shm_of(tag) -> the job's entries left in /dev/shm."""
    from npudist import _shm_names

    return lambda tag: sorted(f for f in os.listdir("/dev/shm") if f.startswith(_shm_names.job_prefix(tag)))
