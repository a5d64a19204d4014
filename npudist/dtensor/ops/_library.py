"""Registration plumbing shared by the fused-op modules of npudist.dtensor.ops.

Every op is defined in npudist's one ``npu`` op library (:data:`npudist._op_library.LIB`, shared
with npudist.compat.ops). Each op module calls
:func:`define` with its schemas, then decorates its kernels (:func:`kernel`: registered for
npu (PrivateUse1) and cpu), fake kernels (:func:`fake`), autograd formula (:func:`autograd`)
and DTensor sharding strategies (:func:`sharding`). Sharding strategies are recorded here and
handed to DTensor (``register_sharding``) when torch.distributed.tensor is imported — at once
if it is already, else right after its first import — so that defining the ops never imports
DTensor (about a second). Importing this module imports torch and nothing of
torch.distributed.tensor.
"""
from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
import warnings

import torch

from npudist._op_library import LIB

INT_MAX = 2147483647
"""torch_npu's "no limit" for pre_tockens / next_tockens."""

SCHEMAS: dict[str, str] = {}
"""Every op defined so far: name -> schema (torch_npu's)."""

STRATEGIES: dict[str, object] = {}
"""Every op's DTensor sharding strategy function: name -> fn (see :func:`sharding`)."""

_registered: set[str] = set()


def acc_dtype(dtype: torch.dtype) -> torch.dtype:
    """The dtype the kernels compute in: float32 as torch_npu does, float64 for float64 inputs
    (torch_npu has no float64; gradcheck needs it)."""
    return torch.float64 if dtype == torch.float64 else torch.float32


def define(schemas: dict[str, str], tags: dict[str, tuple] | None = None) -> None:
    """Defines ``torch.ops.npu.<name>`` for every schema. Raises RuntimeError when one exists
    already (a real torch_npu in the same environment), before defining any of them."""
    existing = {name for name in schemas if hasattr(torch.ops.npu, name)}
    if existing:
        raise RuntimeError(f"torch.ops.npu already defines {sorted(existing)} (is torch_npu installed in this "
                           f"environment?); npudist's fused ops cannot be registered next to them")
    for name, schema in schemas.items():
        LIB.define(schema, tags=(tags or {}).get(name, ()))
        SCHEMAS[name] = schema


def kernel(name: str):
    """Decorator: the function is ``npu::<name>``'s kernel on npu (PrivateUse1) and cpu."""
    def deco(fn):
        for key in ("CPU", "PrivateUse1"):
            LIB.impl(name, fn, key)
        return fn
    return deco


def fake(name: str):
    """Decorator: the function is ``npu::<name>``'s fake (meta) kernel (FakeTensorMode, torch.compile)."""
    return torch.library.register_fake(f"npu::{name}", lib=LIB)


def autograd(name: str, backward, setup_context) -> None:
    """Registers ``npu::<name>``'s autograd formula (torch.library.register_autograd)."""
    torch.library.register_autograd(f"npu::{name}", backward, setup_context=setup_context, lib=LIB)


def sharding(name: str):
    """Decorator: records the function as ``npu::<name>``'s DTensor sharding strategy (the
    signature of ``torch.distributed.tensor.experimental.register_sharding``'s functions).
    It reaches DTensor at once when torch.distributed.tensor is imported already, else right
    after its first import (see :class:`_RegisterOnDTensorImport`)."""
    def deco(fn):
        STRATEGIES[name] = fn
        if _dtensor_loaded():
            register_strategies()
        else:
            _RegisterOnDTensorImport.install()
        return fn
    return deco


def register_strategies() -> None:
    """Registers every recorded sharding strategy with DTensor (once per op); imports
    torch.distributed.tensor."""
    from torch.distributed.tensor.experimental import register_sharding

    for name, fn in STRATEGIES.items():
        if name not in _registered:
            register_sharding(getattr(torch.ops.npu, name).default)(fn)
            _registered.add(name)


_DTENSOR = "torch.distributed.tensor"


def _dtensor_loaded() -> bool:
    mod = sys.modules.get(_DTENSOR)
    spec = getattr(mod, "__spec__", None)
    return mod is not None and not getattr(spec, "_initializing", False)


class _RegisterOnDTensorImport(importlib.abc.MetaPathFinder):
    """A one-shot import hook: runs :func:`register_strategies` right after the first import of
    torch.distributed.tensor finishes.

    DTensor reads sharding strategies from a registry filled by ``register_sharding``, which
    imports DTensor (about a second); it has no lazy registration of its own. Registering when
    DTensor arrives keeps ``import npudist.dtensor.ops`` (and ``import npudist.dtensor``) free of
    that import while any code that makes a DTensor finds the strategies in place. The hook only
    wraps the loader Python's own path finder returns for that one module, restores it after the
    module ran, and removes itself from ``sys.meta_path`` on first use.
    """

    _installed = None

    @classmethod
    def install(cls) -> None:
        if cls._installed is None:
            cls._installed = cls()
            sys.meta_path.insert(0, cls._installed)

    def find_spec(self, fullname, path, target=None):
        if fullname != _DTENSOR:
            return None
        if self in sys.meta_path:
            sys.meta_path.remove(self)
        spec = importlib.machinery.PathFinder.find_spec(fullname, path, target)
        if spec is not None and spec.loader is not None and hasattr(spec.loader, "exec_module"):
            spec.loader = _RegisterAfterLoad(spec.loader)
        return spec


class _RegisterAfterLoad(importlib.abc.Loader):
    """Delegates to the real loader; after the module ran, restores it and registers."""

    def __init__(self, loader):
        self._loader = loader

    def __getattr__(self, name):
        return getattr(self._loader, name)

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        self._loader.exec_module(module)
        module.__loader__ = module.__spec__.loader = self._loader
        try:
            register_strategies()
        except Exception as e:  # noqa: BLE001  - never break the user's import of DTensor
            warnings.warn(f"npudist: registering the npu fused ops' DTensor sharding strategies failed ({e!r}); "
                          f"call npudist.dtensor.ops.register_strategies() to see the error", RuntimeWarning, stacklevel=2)
