"""Builds npudist._C from csrc/ against the installed torch (see pyproject.toml).

Also writes npudist/_build_info.py, which `import npudist` compares with the
torch it runs on before loading the extension.
"""
import glob
import hashlib
import os
import shlex
import subprocess
import sys

# Building imports torch; with an older npudist installed, torch's backend
# autoload would import that stale build while we rebuild it.
os.environ["TORCH_DEVICE_BACKEND_AUTOLOAD"] = "0"

import numpy
import torch
from setuptools import setup
from torch.utils.cpp_extension import BuildExtension, CppExtension

ROOT = os.path.dirname(os.path.abspath(__file__))
# PEP 517 builds (pip install -e .) run this file without the repository on sys.path.
sys.path.insert(0, ROOT)
import csrc_unity  # noqa: E402  (after the repository is on sys.path)
from csrc_includes import includes_heavy_headers  # noqa: E402  (after the repository is on sys.path)

# The standard torch 2.13's BuildExtension would append (torch's headers need C++20), named here
# so the precompiled header and the units are built with the same one.
CXX_STD = "-std=c++20"


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
    """Every .cpp under csrc/: a new unit is built (in its layer's unity chunk) without an edit here."""
    return sorted(glob.glob(os.path.join("csrc", "**", "*.cpp"), recursive=True))


class ExtensionBuild(BuildExtension):
    """torch's BuildExtension (ninja) with a unity build, plus an opt-in GCC precompiled header.

    Unity build (on by default; NPUDIST_BUILD_UNITY=0 compiles every unit alone): the units of one
    layer of csrc/ are compiled as a few generated translation units, ``<build_temp>/unity/
    unity_<layer>_<k>.cpp``, each #including a run of the layer's units (csrc_unity.py says how they
    are grouped and the rules units follow), because torch's headers, not the units' own code, are
    most of each unit's compile time. The generated files are rewritten only when their member list
    changes, and ninja's depfiles name every member, so an edit rebuilds the one chunk holding it.

    Precompiled header:
    torch's BuildExtension has no PCH outside JIT ``load(use_pch=True)``. Before the objects are
    compiled, this builds ``<build_temp>/pch/npudist_pch.h.gch`` with exactly the flags ninja
    gives every unit (same compiler, defines, -O, -std: GCC rejects a PCH built otherwise), and
    adds ``-include <that header> -Winvalid-pch`` to the flags of every unit that includes torch,
    ATen, pybind11 or Python headers (:func:`includes_heavy_headers`, so any new .cpp is sorted
    without edits); the others are compiled first without it, in ``<build_temp>/light``. The .gch is rebuilt only when its command, csrc/precompiled.h or torch's
    version change; it then touches the forced header, which every object's depfile lists, so
    ninja rebuilds the objects too, and only then (incremental builds stay incremental).
    The .gch builds while the light units compile. ``-fpch-preprocess`` lets ccache cache units that use the PCH (run.sh sets the
    CCACHE_SLOPPINESS ccache needs for that). Off by default, on with NPUDIST_BUILD_PCH=1 (GCC only:
    clang's PCH is a different mechanism): measured per unit (benchmarks/build_time.py)
    it saves the heavy bindings units up to 1.65x of their CPU time but costs others more than it
    saves, because a unit then instantiates and emits code for everything the union of headers
    defines inline (``-ftime-report``: csrc/util/env.cpp spends 12 s in "lang. deferred" and "opt
    and generate" with the PCH, 1 s without), and ccache hashes the 0.5 GB .gch for every unit.
    """

    def build_extension(self, ext):
        if _env_reader().get_bool("NPUDIST_BUILD_UNITY", True):
            ext.sources = csrc_unity.write(csrc_unity.plan(ext.sources), os.path.join(self.build_temp, "unity"))
        if not (_env_reader().get_bool("NPUDIST_BUILD_PCH", False) and self._compiler_is_gcc()):
            return super().build_extension(ext)
        # Loading the .gch costs GCC seconds of CPU (it is ~0.5 GB): units that include nothing
        # heavier than c10 compile faster without it, in their own ninja build (build_temp/light),
        # and join the link as extra objects.
        light = [src for src in ext.sources if not includes_heavy_headers(src)]
        finish_pch = self._start_pch(ext)  # on the core the light units leave idle
        if light:
            objects = self.compiler.compile(light, output_dir=os.path.join(self.build_temp, "light"),
                                            macros=list(ext.define_macros), include_dirs=ext.include_dirs,
                                            debug=self.debug, extra_postargs=list(ext.extra_compile_args),
                                            depends=ext.depends)
            ext.sources = [src for src in ext.sources if src not in light]
            ext.extra_objects = list(ext.extra_objects or []) + objects
            ext.depends = list(ext.depends or []) + light  # an edit to a light unit relinks too
        header = finish_pch()
        ext.extra_compile_args += ["-include", header, "-Winvalid-pch", "-fpch-preprocess"]
        super().build_extension(ext)

    def _compiler_is_gcc(self):
        cxx = _env_reader().get_str("CXX", "c++")  # the compiler torch's BuildExtension uses
        try:
            out = subprocess.run([cxx, "--version"], capture_output=True, text=True, check=True).stdout
        except (OSError, subprocess.CalledProcessError):
            return False
        return "clang" not in out and ("g++" in out or "GCC" in out or "Free Software Foundation" in out)

    def _pch_command(self, ext, wrapper, gch):
        # The same pieces torch's ninja compile rule joins: $cxx $cflags -c $in -o $out $post_cflags,
        # cflags = the compiler's preprocess/cc args + its compiler_so flags.
        macros = list(ext.define_macros) + [(undef,) for undef in ext.undef_macros]
        _, _, extra_postargs, pp_opts, _ = self.compiler._setup_compile(
            self.build_temp, macros, ext.include_dirs, [], ext.depends, list(ext.extra_compile_args))
        include_abs = [f"-I{os.path.abspath(opt[2:])}" if opt.startswith("-I") else opt for opt in pp_opts]
        cflags = self.compiler._get_cc_args(include_abs, self.debug, None) + list(self.compiler.compiler_so[1:])
        post = list(extra_postargs)
        if not any(flag.startswith("-std=") for flag in post):
            # torch appends its own default -std only to the units' flags; a PCH built with another
            # standard is rejected by GCC, so the extension names its standard (CXX_STD below).
            raise RuntimeError("the extension's extra_compile_args name no -std=: the precompiled header must be "
                               "built with the standard the units use")
        cxx = _env_reader().get_str("CXX", "c++")  # the compiler torch's BuildExtension uses
        return [cxx, *cflags, "-x", "c++-header", wrapper, "-o", gch, *post]

    def _start_pch(self, ext):
        """Starts building the .gch unless it is up to date; returns a function that waits for it
        and returns the header to force-include."""
        pch_dir = os.path.abspath(os.path.join(self.build_temp, "pch"))
        os.makedirs(pch_dir, exist_ok=True)
        wrapper = os.path.join(pch_dir, "npudist_pch.h")
        gch = wrapper + ".gch"
        source = os.path.join(ROOT, "csrc", "precompiled.h")
        cmd = self._pch_command(ext, wrapper, gch)
        with open(source, "rb") as f:
            signature = hashlib.sha256((shlex.join(cmd) + torch.__version__).encode() + f.read()).hexdigest()
        sig_path = gch + ".sig"
        if os.path.exists(gch) and os.path.exists(sig_path) and open(sig_path).read() == signature:
            return lambda: wrapper
        with open(wrapper, "w") as f:  # written (and so touched) on every rebuild of the .gch
            f.write(f"// generated by setup.py: the precompiled form of {source}\n#include \"{source}\"\n")
        print(f"precompiling {source}", flush=True)
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)

        def finish():
            _, err = proc.communicate()
            if proc.returncode != 0:
                raise RuntimeError(f"building the precompiled header failed (set NPUDIST_BUILD_PCH=0 to build "
                                   f"without it):\n{shlex.join(cmd)}\n{err[-4000:]}")
            with open(sig_path, "w") as f:
                f.write(signature)
            return wrapper

        return finish


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
            # NumPy's C API: csrc/xp (xp's ufunc fast path builds NumPy arrays over npu memory).
            include_dirs=[os.path.join(ROOT, "csrc"), os.path.join(os.path.dirname(torch.__file__), "include", "kineto"),
                          numpy.get_include()],
            extra_compile_args=["-O2", "-g0", "-Wall", "-Wno-unused-parameter", "-Wno-sign-compare", CXX_STD],
        )
    ],
    cmdclass={"build_ext": ExtensionBuild.with_options(use_ninja=True)},
)
