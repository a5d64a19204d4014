"""npudist: distributed training on multi-NPU clusters with ordinary PyTorch.

Importing npudist (or just ``import torch``, through the ``torch.backends``
entry point) registers the ``npu`` device: ``torch.device("npu")``,
``tensor.npu()``, ``torch.npu`` and ``torch.accelerator``. On machines without
NPUs each npu is simulated on host memory (see docs/architecture.md).

Raises:
    npudist._compat.NpudistBuildError (an ImportError): the C++ extension is
        missing or was built against another torch; the message names both
        versions and the rebuild command.
"""
import os as _os

import torch as _torch

from npudist import _compat

_PACKAGE_DIR = _os.path.dirname(_os.path.abspath(__file__))
_compat.check_build(_PACKAGE_DIR, _torch.__version__)
_C = _compat.load_extension(_PACKAGE_DIR)

from npudist import device  # noqa: E402  (runs after the extension is loaded above)
from npudist._registration import register as _register  # noqa: E402  (runs after the extension is loaded above)

_register()

from npudist.graph import compile as _graph_compile  # noqa: E402  (runs after the extension is loaded above)

_graph_compile.install()  # torch.compile support, registered when torch._dynamo is imported

import torch.distributed as _dist  # noqa: E402  (runs after the extension is loaded above)

if _dist.is_available():
    from npudist import hccl  # registers the "hccl" c10d backend

from npudist import _env  # noqa: E402  (the one environment reader, docs/env_vars.md)

if _env.raw("NPUDIST_METRICS_PORT") or _env.raw("NPUDIST_METRICS_DIR"):
    # a rank's metrics endpoint (docs/metrics.md); only ranks ($RANK/$LOCAL_RANK) serve
    from npudist.watchdog.metrics import autostart as _metrics_autostart

    _metrics_autostart.from_env()

if _env.get_str("NPUDIST_FAULT_INJECT"):  # docs/fault_injection.md; a bad spec raises here
    from npudist import fault_inject as _fault_inject

    _fault_inject.configure_from_env()

try:  # `import torch_npu` where no real torch_npu is installed (docs/torch_npu_compat.md)
    import npudist_torch_npu_finder as _torch_npu_finder

    _torch_npu_finder.install()
except ImportError:  # a layout without the top-level finder module: the .pth file does it, if installed
    pass

__all__ = ["device", "hccl"]
__version__ = "0.1.0"
