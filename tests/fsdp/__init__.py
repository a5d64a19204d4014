"""Tests of FSDP2/DDP/DCP on npu: each test module holds the function its ranks run
(npudist.testing.multiproc.run_on_ranks) beside its asserts; tiny_gpt has the model and data.

``launch(script, nranks, ...)`` (:func:`npudist.testing.multiproc.launch` on
``tests/fsdp/workers/<script>``) stays for tests written as worker scripts.
"""
import os

from npudist.testing import multiproc

WORKERS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "workers")


def launch(script, nranks, args=(), env=None, timeout=240):
    """Runs workers/<script> on `nranks` ranks; returns npudist.testing.multiproc.Ranks."""
    return multiproc.launch(os.path.join(WORKERS, script), nranks, args=args, env=env, timeout=timeout)
