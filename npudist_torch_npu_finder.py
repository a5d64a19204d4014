"""Makes ``import torch_npu`` work where no real torch_npu is installed (npudist's compatibility layer).

Installed on ``sys.meta_path`` at interpreter start by the ``npudist-torch-npu.pth`` file
(setup.py puts it in site-packages) and again by ``import npudist`` (idempotent), so
``import torch_npu`` works even as a script's first import. This module must stay light:
it runs in every Python process of the environment, before anything else, and imports
neither torch nor npudist.

A real torch_npu always wins: the finder sits at the END of ``sys.meta_path``, so the
standard path finder (which finds an installed torch_npu on ``sys.path``) answers first,
and it also steps aside when any finder after it can find ``torch_npu``. It answers only
for the top-level name ``torch_npu``; submodules (``torch_npu.contrib``, ...) are found in
that package's ``__path__``: npudist/compat/torch_npu_pkg/, which is not where a real
torch_npu's files go. ``NPUDIST_TORCH_NPU_COMPAT=0`` turns it off.
"""
import importlib.machinery
import importlib.util
import os
import sys

ENV = "NPUDIST_TORCH_NPU_COMPAT"


class TorchNpuCompatFinder:
    """A meta-path finder that serves npudist's ``torch_npu`` package when nothing else provides one."""

    @classmethod
    def find_spec(cls, fullname, path=None, target=None):
        if fullname != "torch_npu":
            return None
        meta_path = list(sys.meta_path)
        later = meta_path[meta_path.index(cls) + 1:] if cls in meta_path else []
        for finder in later:  # a finder installed after us (e.g. another editable install) wins
            find = getattr(finder, "find_spec", None)
            if find is not None and find(fullname, path, target) is not None:
                return None
        npudist_spec = importlib.util.find_spec("npudist")
        if npudist_spec is None or not npudist_spec.submodule_search_locations:
            return None
        if not _env_reader(list(npudist_spec.submodule_search_locations)[0]).get_bool(ENV, True):
            return None
        pkg_dir = os.path.join(list(npudist_spec.submodule_search_locations)[0], "compat", "torch_npu_pkg")
        init = os.path.join(pkg_dir, "__init__.py")
        if not os.path.exists(init):
            return None
        return importlib.util.spec_from_file_location("torch_npu", init, submodule_search_locations=[pkg_dir])


_ENV_READER = None


def _env_reader(npudist_dir):
    """npudist's one environment reader (npudist/_env.py), loaded from its file: importing the
    npudist package here would import torch."""
    global _ENV_READER
    if _ENV_READER is None:
        spec = importlib.util.spec_from_file_location("_npudist_env_for_finder", os.path.join(npudist_dir, "_env.py"))
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        _ENV_READER = module
    return _ENV_READER


def install():
    """Appends the finder to ``sys.meta_path`` once (last, so any real torch_npu is found first)."""
    if TorchNpuCompatFinder not in sys.meta_path:
        sys.meta_path.append(TorchNpuCompatFinder)
