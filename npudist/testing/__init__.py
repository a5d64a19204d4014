"""Test helpers shipped with npudist (used by tests/, benchmarks/ and the coverage reports;
docs/testing.md).

- ``multiproc``: launch N real rank processes (one environment policy, ``RESULT`` lines,
  per-rank failure output, timeouts) and ``free_port``;
- ``npurun``: start npurun itself (to completion or in the background);
- ``checks``: the in-rank side (``report``, ``Checker``);
- ``opinfo`` / ``op_coverage``: PyTorch's OpInfo database on npu against cpu;
- ``dtensor_sweep`` / ``dtensor_coverage``: the same on DTensors over npu and cpu meshes.

Importing this package imports nothing of them.
"""
