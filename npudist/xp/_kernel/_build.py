"""Compiling generated kernel sources to shared libraries, cached on disk by source hash.

A translation unit (the prelude of _runtime plus the generated kernel) is compiled with
``g++ -O2 -shared -fPIC`` (``NPUDIST_XP_CXX`` names another compiler) into
``<cache>/<sha256 of compiler, flags and source>.so`` and loaded with ctypes; no torch header is
included, so a kernel compiles in about a second. The cache directory is
``NPUDIST_XP_KERNEL_CACHE``, else ``~/.cache/npudist/xp_kernels``. Libraries are written to a
temporary name and renamed, so concurrent processes (ranks) compiling the same kernel never see a
partial file; a process that finds the library reuses it without compiling.

User code is marked with ``#line`` directives, so compiler messages name ``operation:LINE``,
``preamble:LINE``, ``map_expr:LINE`` ... instead of lines of the generated file.
"""
from __future__ import annotations

import ctypes
import hashlib
import os
import shutil
import subprocess
import tempfile
import threading

from ... import _env
from ._runtime import PRELUDE

CACHE_ENV = "NPUDIST_XP_KERNEL_CACHE"
CXX_ENV = "NPUDIST_XP_CXX"
FLAGS = ("-O2", "-shared", "-fPIC", "-std=c++17", "-fno-math-errno", "-fvect-cost-model=dynamic", "-w")
_VERSION = "1"   # bump when the code generator changes what a source means

_lock = threading.Lock()
_loaded = {}           # key -> ctypes.CDLL
_compiler_ids = {}     # compiler path -> its --version line


class CompileException(Exception):
    """A user kernel failed to compile (as ``cupy.cuda.compiler.CompileException``).

    ``str(e)`` has the compiler's messages with lines of the user's code (``operation:3:5: error:
    ...``); ``e.source`` is the whole translation unit, ``e.name`` the kernel's name."""

    def __init__(self, msg, source, name):
        super().__init__(msg)
        self.source = source
        self.name = name

    def dump(self, f):
        """Writes the generated source with line numbers to the file object ``f`` (as CuPy's)."""
        for n, line in enumerate(self.source.splitlines(), 1):
            f.write(f"{n:05d} {line}\n")


def cache_dir():
    """The directory compiled kernels are cached in (created if missing)."""
    d = _env.get_str(CACHE_ENV) or os.path.join(os.path.expanduser("~"), ".cache", "npudist", "xp_kernels")
    os.makedirs(d, exist_ok=True)
    return d


def _compiler():
    cxx = _env.get_str(CXX_ENV, "g++")
    path = shutil.which(cxx)
    if path is None:
        raise RuntimeError(f"npudist.xp user kernels need a C++17 compiler: {cxx!r} was not found on PATH "
                           f"(install g++, or set {CXX_ENV} to a compiler)")
    ident = _compiler_ids.get(path)
    if ident is None:
        out = subprocess.run([path, "--version"], capture_output=True, text=True)
        ident = _compiler_ids[path] = (out.stdout.splitlines() or [""])[0]
    return path, ident


def full_source(body):
    return PRELUDE + "\n#line 1 \"kernel\"\n" + body


def load(body, name):
    """The loaded library of a generated kernel ``body`` (compiled on first use, else from the
    cache). Raises CompileException with the compiler's messages when the code does not compile."""
    source = full_source(body)
    cxx, ident = _compiler()
    key = hashlib.sha256("\0".join((_VERSION, ident, " ".join(FLAGS), source)).encode()).hexdigest()[:40]
    lib = _loaded.get(key)
    if lib is not None:
        return lib
    with _lock:
        lib = _loaded.get(key)
        if lib is not None:
            return lib
        d = cache_dir()
        so = os.path.join(d, key + ".so")
        if not os.path.exists(so):
            _compile(cxx, source, so, d, name)
        lib = _loaded[key] = ctypes.CDLL(so)
        return lib


def _compile(cxx, source, so, d, name):
    fd, src = tempfile.mkstemp(suffix=".cpp", prefix=f".{name}-", dir=d)
    tmp_so = src[:-4] + ".so"
    try:
        with os.fdopen(fd, "w") as f:
            f.write(source)
        r = subprocess.run([cxx, *FLAGS, src, "-o", tmp_so], capture_output=True, text=True)
        if r.returncode != 0:
            msg = r.stderr.replace(src + ":", "").strip()
            raise CompileException(f"kernel {name!r} failed to compile ({os.path.basename(cxx)} {' '.join(FLAGS)}):\n"
                                   f"{msg}", source, name)
        os.replace(tmp_so, so)
    finally:
        for p in (src, tmp_so):
            try:
                os.unlink(p)
            except FileNotFoundError:
                pass


def clear_memory_cache():
    """Forgets the libraries loaded in this process (the disk cache stays): for tests."""
    _loaded.clear()
