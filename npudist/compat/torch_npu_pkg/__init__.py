"""``torch_npu`` as npudist provides it where no real torch_npu is installed.

Served under the name ``torch_npu`` by npudist_torch_npu_finder; never import it as
``npudist.compat.torch_npu_pkg``. A thin layer over npudist (docs/architecture.md): see
npudist.compat.torch_npu_api and docs/torch_npu_compat.md.
"""
import torch

import npudist  # registers npu when TORCH_DEVICE_BACKEND_AUTOLOAD=0
import npudist.compat.ops  # torch.ops.npu.npu_grouped_matmul, npu_moe_*, ...
import npudist.dtensor  # noqa: F401  (the fused four; DTensor strategies register when DTensor is imported)
from npudist import _cann
from npudist.compat import torch_npu_api as _api

npu = torch.npu
# CANN's environment, as set_env.sh and torch_npu give it (npudist/_cann.py): ASCEND_HOME_PATH and
# its siblings where unset, and torch.version.cann read from the version file there.
_cann.apply()
if getattr(torch.version, "cann", None) is None:
    torch.version.cann = _cann.version()
_SUBPACKAGES = ("contrib", "optim", "profiler", "utils")
__version__ = _api.version()
_api.install_submodules(__name__)


def __getattr__(name):
    if name == "__all__":  # computed on demand: it needs the ops registered
        return _api.top_level_all()
    if name in _SUBPACKAGES:  # as torch_npu, its subpackages are attributes after `import torch_npu`
        import importlib

        return importlib.import_module(f"{__name__}.{name}")
    return _api.top_level_attr(globals(), name)


def __dir__():
    return sorted(set(globals()) | set(_api.available_ops()) | set(_SUBPACKAGES))
