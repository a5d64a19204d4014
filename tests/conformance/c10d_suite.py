"""PyTorch's own distributed test suite (``DistributedTest._DistTestBase``), run
on whichever backend the BACKEND environment variable names.

Not collected by our pytest run (no ``test_`` prefix): the runner
(``benchmarks/c10d_conformance.py``, and ``test_c10d_conformance.py`` in the
full tier) runs this file once per backend in its own process, because
``distributed_test`` reads BACKEND, WORLD_SIZE and TEMP_DIR at import.
Ranks are spawned (torch.multiprocessing "spawn") and re-import this file,
which is why the feature registration is imported here, first.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import hccl_features  # noqa: F401  (must precede distributed_test)
from torch.testing._internal.distributed.distributed_test import (
    DistributedTest,
    TestDistBackend,
)


class TestDistBackendWithSpawn(TestDistBackend, DistributedTest._DistTestBase):
    """The suite with one spawned process per rank, as PyTorch's test_distributed_spawn.py runs it."""

    def setUp(self):
        super().setUp()
        self._spawn_processes()
