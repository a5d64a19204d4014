"""``torch_npu.profiler``: npudist.compat.profiler (torch.profiler with torch_npu's names; partial, see there)."""
from npudist.compat.profiler import *  # noqa: F403  (torch_npu.profiler is npudist.compat.profiler's namespace)
from npudist.compat.profiler import __all__, _ExperimentalConfig  # noqa: F401  (re-exported as torch_npu.profiler's)
