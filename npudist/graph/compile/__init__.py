"""torch.compile on npu: Dynamo and Inductor registration for the npu device.

``import npudist`` calls :func:`install`, which costs almost nothing: it
registers npu with Dynamo and Inductor (``register_interface_for_device``,
``register_backend_for_device(..., device_custom_config=config)``,
``register_device_op_overrides``) the moment ``torch._dynamo`` is first
imported, i.e. on the first ``torch.compile`` call, before anything is traced.
Inductor then compiles npu graphs with its C++ CPU code generator (npu memory
is host memory); see ``_inductor.py`` and docs/graph.md.

``backend="npugraphs"`` (``_npugraphs.py``) replays Inductor's compiled graphs
through torch.npu.NPUGraph. ``mode="reduce-overhead"`` warns (Inductor's graph
replay is cuda-only, with no device hook) and compiles without graph replay.
"""
from __future__ import annotations

import importlib.abc
import sys
import warnings

_DYNAMO = "torch._dynamo"


def register() -> None:
    """Registers npu with Dynamo and Inductor now (imports torch._dynamo; idempotent)."""
    from npudist.graph.compile._registration import register as _register

    _register()


def _register_after_dynamo_import() -> None:
    try:
        register()
    except Exception as err:  # never break `import torch._dynamo` itself
        warnings.warn(
            f"npu was not registered with torch.compile ({type(err).__name__}: {err}); "
            "npu graphs will fail to compile. `npudist.graph.compile.register()` shows the full error.",
            RuntimeWarning,
            stacklevel=2,
        )


class _ThenRegister(importlib.abc.Loader):
    """Runs the real loader of torch._dynamo, then registers npu."""

    def __init__(self, loader):
        self._loader = loader

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        # the module keeps its own loader: nothing of ours stays in torch._dynamo
        module.__loader__ = self._loader
        if module.__spec__ is not None:
            module.__spec__.loader = self._loader
        self._loader.exec_module(module)
        _register_after_dynamo_import()


class _DynamoImportFinder(importlib.abc.MetaPathFinder):
    """One-shot finder: lets the other finders locate torch._dynamo and wraps its loader."""

    def find_spec(self, fullname, path, target=None):
        if fullname != _DYNAMO:
            return None
        _uninstall_finder()
        for finder in sys.meta_path:
            find_spec = getattr(finder, "find_spec", None)
            spec = find_spec(fullname, path, target) if find_spec is not None else None
            if spec is not None:
                if spec.loader is not None:
                    spec.loader = _ThenRegister(spec.loader)
                return spec
        return None


_finder: _DynamoImportFinder | None = None


def _uninstall_finder() -> None:
    global _finder
    if _finder is not None and _finder in sys.meta_path:
        sys.meta_path.remove(_finder)
    _finder = None


def install() -> None:
    """Arranges for :func:`register` to run when torch._dynamo is imported (now if it already is)."""
    global _finder
    if _DYNAMO in sys.modules:
        _register_after_dynamo_import()
        return
    if _finder is None:
        _finder = _DynamoImportFinder()
        sys.meta_path.insert(0, _finder)
