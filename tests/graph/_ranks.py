"""Starts real rank processes for the multi-rank compile tests (the one launcher of tests/graph:
tests/hccl/_ranks.py's, pointed at tests/graph/workers; to switch to the shared harness in
npudist/testing, change only this file)."""
import os

from hccl._ranks import launch as _launch  # noqa: F401  (tests/ is on sys.path under pytest)

WORKERS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "workers")


def launch(script, nranks, args=(), env=None, timeout=600):
    """Runs tests/graph/workers/<script> on nranks ranks (env:// on a free port) and waits for all."""
    return _launch(os.path.join(WORKERS, script), nranks, args=args, env=env, timeout=timeout)
