"""Starts real rank processes for the FSDP2/DDP/DCP tests (tests/hccl/_ranks.py's launcher,
pointed at tests/fsdp/workers)."""
import os

from hccl._ranks import REPO, free_port, launch as _launch  # noqa: F401  (tests/ is on sys.path under pytest)

WORKERS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "workers")


def launch(script, nranks, args=(), env=None, timeout=240):
    """Runs tests/fsdp/workers/<script> on nranks ranks (env:// on a free port) and waits for all."""
    return _launch(os.path.join(WORKERS, script), nranks, args=args, env=env, timeout=timeout)
