"""Builds npudist._C from csrc/ against the installed torch (see pyproject.toml).

Also writes npudist/_build_info.py, which `import npudist` compares with the
torch it runs on before loading the extension.
"""
import glob
import os

# Building imports torch; with an older npudist installed, torch's backend
# autoload would import that stale build while we rebuild it.
os.environ["TORCH_DEVICE_BACKEND_AUTOLOAD"] = "0"

import numpy
import torch
from setuptools import setup
from torch.utils.cpp_extension import BuildExtension, CppExtension

ROOT = os.path.dirname(os.path.abspath(__file__))


def write_build_info():
    path = os.path.join(ROOT, "npudist", "_build_info.py")
    text = (
        "# Written by setup.py at build time; compared with the running torch on import.\n"
        f"TORCH_VERSION = {torch.__version__!r}\n"
        f"CXX11_ABI = {torch.compiled_with_cxx11_abi()!r}\n"
        f"SOURCE_DIR = {ROOT!r}\n"
    )
    old = open(path).read() if os.path.exists(path) else None
    if old != text:
        with open(path, "w") as f:
            f.write(text)


def sources():
    found = []
    for sub in ("util", "driver", "core", "hccl", "profiler", "bindings"):
        found += glob.glob(os.path.join("csrc", sub, "**", "*.cpp"), recursive=True)
    return sorted(found)


def pth_data_files():
    """npudist-torch-npu.pth into site-packages (as wheel data, so editable installs get it too).

    Its one line installs npudist_torch_npu_finder at interpreter start, so that
    `import torch_npu` works as a script's first import (docs/torch_npu_compat.md).
    """
    import sysconfig

    rel = os.path.relpath(sysconfig.get_path("purelib"), sysconfig.get_path("data"))
    return [(rel, ["npudist-torch-npu.pth"])]


def _env_reader():
    """npudist's one environment reader (npudist/_env.py), loaded from its file: the package
    itself cannot be imported while it is being built."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("_npudist_env_for_setup",
                                                  os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                               "npudist", "_env.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


write_build_info()
# run.sh installs the package (editable) with NPUDIST_SKIP_EXT_BUILD=1 and
# builds the extension itself, into build/ and then renamed into place, so
# that processes running meanwhile never see a half-written library.
SKIP_EXT = _env_reader().get_bool("NPUDIST_SKIP_EXT_BUILD", False)
setup(
    data_files=pth_data_files(),
    ext_modules=[] if SKIP_EXT else [
        CppExtension(
            name="npudist._C",
            sources=sources(),
            # Kineto's headers (the npu activity profiler, csrc/profiler) include one another by bare name.
            # NumPy's C API: csrc/core/xp (xp's ufunc fast path builds NumPy arrays over npu memory).
            include_dirs=[os.path.join(ROOT, "csrc"), os.path.join(os.path.dirname(torch.__file__), "include", "kineto"),
                          numpy.get_include()],
            extra_compile_args=["-O2", "-g0", "-Wall", "-Wno-unused-parameter", "-Wno-sign-compare"],
        )
    ],
    cmdclass={"build_ext": BuildExtension.with_options(use_ninja=True)},
)
