"""Tests of npurun; workers/job.py is the job the launched ranks run.

``run_npurun`` / ``Running`` are :mod:`npudist.testing.npurun`'s, run from this directory with
``TMPDIR`` set to one directory per test session (npurun keeps the temporary log directory of
a failed run there; the conftest removes it at the end of the session).
"""
import os
import tempfile

from npudist.testing import npurun as _npurun
from npudist.testing.npurun import facts  # noqa: F401  (the tests import it from here)

HERE = os.path.dirname(os.path.abspath(__file__))
JOB = os.path.join(HERE, "workers", "job.py")
TMPDIR = tempfile.mkdtemp(prefix="npurun-tests-")


def _env(env):
    return {"TMPDIR": TMPDIR, **(env or {})}


def run_npurun(args, env=None, timeout=120):
    """Runs npurun to completion; returns the CompletedProcess (text)."""
    return _npurun.run_npurun(args, env=_env(env), timeout=timeout, cwd=HERE)


def Running(args, env=None):  # noqa: N802  (reads as the class it returns)
    """npurun started in the background (an npudist.testing.npurun.Npurun)."""
    return _npurun.Npurun(args, env=_env(env), cwd=HERE)
