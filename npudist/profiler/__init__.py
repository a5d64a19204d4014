"""npudist.profiler: what torch.profiler lacks for a whole job on npus (docs/profiling.md).

torch.profiler itself records npu activity: npudist registers a Kineto activity profiler for
the PrivateUse1 device, so ``torch.profiler.profile(activities=[ProfilerActivity.CPU,
ProfilerActivity.PrivateUse1])`` shows npu kernels, copies, collectives and graph replays on
one lane per stream. This package adds:

- :func:`step`: marks the end of a training step for the job-wide profiler that
  ``npurun --profile DIR [--profile-steps A:B]`` turns on in every rank (a no-op otherwise);
- :func:`merge_traces` (``python -m npudist.profiler merge DIR -o job.json``): one
  Chrome/Perfetto trace with one process per rank.
"""
from __future__ import annotations

from npudist.profiler.merge import merge_traces
from npudist.profiler.steps import PROFILE_DIR_ENV, PROFILE_STEPS_ENV, is_profiling, parse_steps, step

__all__ = ["step", "is_profiling", "merge_traces", "parse_steps", "PROFILE_DIR_ENV", "PROFILE_STEPS_ENV"]
