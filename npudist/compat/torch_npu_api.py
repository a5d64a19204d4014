"""What ``import torch_npu`` gives where no real torch_npu is installed (npudist/compat/torch_npu_pkg).

- ``torch_npu.npu`` is ``torch.npu`` (``sys.modules["torch_npu.npu"]`` too, and
  ``torch_npu.npu.amp``), with the torch_npu.npu names scripts call
  (npudist.device.torch_npu_extras).
- ``torch_npu.<op>`` is ``torch.ops.npu.<op>``, as in torch_npu; ``import torch_npu``
  registers them all (npudist.compat.ops and ``import npudist.dtensor`` for the fused
  four, whose DTensor strategies register only once torch.distributed.tensor is
  imported), so ``torch.ops.npu.<op>`` works directly too.
- A public torch_npu name npudist does not offer raises
  npudist.compat.names.NotAvailableOnThisRuntime naming it.
"""
from __future__ import annotations

import sys

import torch

from npudist.compat import _public_names
from npudist.compat.names import missing

_ops_registered = False


def ensure_ops() -> None:
    """Registers every torch_npu op npudist implements under torch.ops.npu (once)."""
    global _ops_registered
    if not _ops_registered:
        import npudist.compat.ops
        import npudist.dtensor  # noqa: F401  (npu_rms_norm, npu_rotary_mul, npu_swiglu, npu_fusion_attention)

        _ops_registered = True


def _op(name: str):
    ops = torch.ops.npu
    try:
        return getattr(ops, name)
    except (AttributeError, RuntimeError):
        return None


def available_ops() -> list[str]:
    """torch_npu op names that torch.ops.npu provides here (registers them first)."""
    ensure_ops()
    from npudist.compat.ops import PYTHON_WRAPPERS

    return [n for n in _public_names.TORCH_NPU_OPS if n in PYTHON_WRAPPERS or _op(n) is not None]


def version() -> str:
    """torch_npu-style version: torch's release with npudist's as the local part, e.g. "2.13.0+npudist.0.1.0"."""
    import npudist

    return f"{torch.__version__.split('+')[0]}+npudist.{npudist.__version__}"


def install_submodules(package: str) -> None:
    """``torch_npu.npu`` (and ``.npu.amp``) are torch.npu's module objects, importable by name."""
    sys.modules.setdefault(f"{package}.npu", torch.npu)
    sys.modules.setdefault(f"{package}.npu.amp", torch.npu.amp)


def top_level_attr(module_globals: dict, name: str):
    """``torch_npu.<name>`` for names not defined in the package module: ops, else the clear error."""
    if not name.startswith("__"):
        ensure_ops()
        from npudist.compat.ops import PYTHON_WRAPPERS

        op = PYTHON_WRAPPERS.get(name) or _op(name)
        if op is not None and name in _public_names.TORCH_NPU_OPS:
            module_globals[name] = op
            return op
    raise missing("torch_npu", name)


def top_level_all() -> list[str]:
    """torch_npu.__all__ here: the exposed ops npudist implements, and ``npu``."""
    return ["npu"] + [n for n in available_ops() if n in _public_names.TORCH_NPU_ALL_OPS_EXPOSED]
