"""``torch_npu.profiler``: npudist.compat.profiler (torch.profiler with torch_npu's names; partial, see there)."""
from npudist.compat.profiler import *  # noqa: F401,F403
from npudist.compat.profiler import __all__, _ExperimentalConfig  # noqa: F401
