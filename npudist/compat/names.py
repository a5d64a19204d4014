"""The error for torch_npu names npudist does not offer, and the lookups that raise it.

``NotAvailableOnThisRuntime`` subclasses AttributeError (so ``hasattr(torch_npu, name)``
and ``getattr(..., default)`` feature checks keep working: the name is absent) and
NotImplementedError (so ``except NotImplementedError`` catches it too). Its message
names the attribute, says it is not available on this runtime, and points to
docs/torch_npu_compat.md.
"""
from __future__ import annotations

from npudist.compat import _public_names as _names

DOC = "docs/torch_npu_compat.md"

# module path -> the public names torch_npu defines there
PUBLIC = {
    "torch_npu": frozenset(_names.TORCH_NPU_OPS) | {"HiFloat8Tensor", "erase_stream", "matmul_checksum",
                                                    "ParallelStore", "_ShardedGradScaler", "hifloat8",
                                                    "float8_e8m0fnu", "float4_e2m1fn_x2", "float4_e1m2fn_x2"},
    "torch_npu.npu": frozenset(_names.TORCH_NPU_NPU_ALL),
    "torch_npu.npu.amp": frozenset(_names.TORCH_NPU_AMP_ALL),
    "torch_npu.profiler": frozenset(_names.TORCH_NPU_PROFILER_ALL),
    "torch_npu.contrib": frozenset(_names.TORCH_NPU_CONTRIB_ALL) | {"transfer_to_npu"},
    "torch_npu.utils": frozenset(_names.TORCH_NPU_UTILS_ALL),
    "torch_npu.optim": frozenset(_names.TORCH_NPU_OPTIM_ALL),
}


class NotAvailableOnThisRuntime(AttributeError, NotImplementedError):
    """A public torch_npu name that npudist does not provide (see docs/torch_npu_compat.md)."""


def not_available(module: str, name: str, why: str = "") -> NotAvailableOnThisRuntime:
    """The error for ``module.name``: names it, says it is not available on this runtime, and why if known."""
    reason = f": {why}" if why else ""
    return NotAvailableOnThisRuntime(
        f"{module}.{name} is a torch_npu API that is not available on this runtime (npudist, simulated npu)"
        f"{reason}. {DOC} lists what is available.", name=name)


def missing(module: str, name: str, reasons: dict | None = None):
    """The error for a failed attribute lookup on ``module``: NotAvailableOnThisRuntime for torch_npu's
    public names, a plain AttributeError (as any module's) for names torch_npu does not have either."""
    if name in PUBLIC.get(module, ()):
        return not_available(module, name, (reasons or {}).get(name, ""))
    return AttributeError(f"module '{module}' has no attribute '{name}'", name=name)
