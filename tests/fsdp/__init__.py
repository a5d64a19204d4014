"""Tests of FSDP2/DDP/DCP on npu; the scripts in workers/ run inside each rank.

``launch(script, nranks, ...)`` is :func:`npudist.testing.multiproc.launch` on
``tests/fsdp/workers/<script>``.
"""
import os

from npudist.testing import multiproc

WORKERS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "workers")


def launch(script, nranks, args=(), env=None, timeout=240):
    """Runs workers/<script> on `nranks` ranks; returns npudist.testing.multiproc.Ranks."""
    return multiproc.launch(os.path.join(WORKERS, script), nranks, args=args, env=env, timeout=timeout)
