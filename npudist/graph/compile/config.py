"""npu settings for Inductor: the ``device_custom_config`` of the npu backend.

Registered through ``register_backend_for_device("npu", ...,
device_custom_config=this module)``, so every value here is part of Inductor's
FX-graph cache key, and changing one recompiles. Change them as with any
Inductor config module::

    import npudist.graph.compile.config as npu_config
    with npu_config.patch(wait_for_stream=False):
        ...

Settings (all read while an npu graph is compiled):

``loop_ordering_after_fusion``, ``loop_reindexing_after_fusion``,
``loop_index_inversion_in_fusion`` (default False): the values of the
``torch._inductor.config`` settings of the same names while Inductor
schedules a graph whose device is npu. Inductor 2.13 runs these passes for
every device type except "cpu" and assumes a GPU-style (numel, rnumel) kernel
grouping in them; npu reuses the C++ CPU kernels, whose grouping differs, so
they must be off exactly as they are for cpu (with them on, a reduction next
to a pointwise op crashes the scheduler). cpu compiles never see these values.

``wait_for_stream`` (default True): before each generated kernel the wrapper
completes what the current npu stream has been made to wait for (a
collective's ``Work.wait()``), as every eager npu op does. Turning it off is
only safe for graphs that never read the output of a pending collective.

``capturable_kernels`` (default True): the wrapper launches its C++ kernels
through ``npudist._C._NpuKernel`` (by address) instead of Inductor's Python
binding, so an npu graph capture records them (``backend="npugraphs"``,
``torch.npu.graph`` around compiled code). Off: Inductor's binding, and a
compiled kernel called while the current npu stream captures raises.

``codegen_version``: not a setting; it changes whenever npudist changes the
code it generates for npu, so Inductor's FX graph cache (keyed on this
module) never serves wrapper code written by an older npudist.
"""
import sys

from torch.utils._config_module import install_config_module

loop_ordering_after_fusion: bool = False
loop_reindexing_after_fusion: bool = False
loop_index_inversion_in_fusion: bool = False
wait_for_stream: bool = True
capturable_kernels: bool = True
codegen_version: int = 3

# the torch._inductor.config names this module overrides for npu graphs
_SCHEDULER_OVERRIDES = ("loop_ordering_after_fusion", "loop_reindexing_after_fusion", "loop_index_inversion_in_fusion")

install_config_module(sys.modules[__name__])
