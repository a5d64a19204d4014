"""C++ unit tests of the driver and the caching allocator (tests/cpp/*.cpp, harness tests/cpp/unit.h).

Each binary is built here with the system compiler (``$CXX`` or ``c++``, through ccache when
installed) into build/cpptests/, and rebuilt only when its inputs change; each C++ TEST becomes
one pytest case. The driver's tests compile the driver's sources (no torch); the allocator's
link against the built extension (npudist/_C*.so, which ./run.sh builds) and libtorch, and run
without Python. Building both takes ~15 s once.
"""
from __future__ import annotations

import glob
import hashlib
import os
import re
import shutil
import subprocess

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HERE = os.path.join(REPO, "tests", "cpp")
OUT = os.path.join(REPO, "build", "cpptests")

# binary -> sources relative to the repository, and whether it links against the extension
BINARIES = {
    "test_driver": (["csrc/util/env.cpp", "csrc/driver/config.cpp", "csrc/driver/host_driver.cpp",
                     "csrc/driver/stream_queue.cpp", "tests/cpp/test_driver.cpp"], False),
    "test_allocator": (["tests/cpp/test_allocator.cpp"], True),
}
# runs: (name, binary, environment, cases: a prefix to select or "!prefix" to leave out, or None for all).
# The driver and the allocator read their configuration once per process, hence one run per setting.
_DEVICE = {"NPUDIST_DEVICE_COUNT": "2", "NPUDIST_DEVICE_MEMORY": "64MiB", "ASCEND_RT_VISIBLE_DEVICES": None,
           "PYTORCH_NPU_ALLOC_CONF": None}
RUNS = [
    ("driver", "test_driver", _DEVICE, None),
    ("allocator", "test_allocator", _DEVICE, "!expandable_"),
    ("allocator_expandable", "test_allocator", dict(_DEVICE, PYTORCH_NPU_ALLOC_CONF="expandable_segments:True"),
     "expandable_"),
]
FLAGS = ["-std=c++20", "-O1", "-g0", "-Wall", "-Wno-sign-compare", "-pthread", "-Icsrc", "-Itests/cpp"]


def _torch_flags():
    """Compile and link flags for a binary on the extension and libtorch (no Python at run time)."""
    import sysconfig

    import torch

    tdir = os.path.dirname(torch.__file__)
    ext = sorted(glob.glob(os.path.join(REPO, "npudist", "_C*.so")))
    if not ext:
        pytest.fail("npudist/_C*.so is not built: run ./run.sh build")
    # the extension has no soname: link a copy under a library name (rebuilt with it, see _inputs_hash)
    lib = os.path.join(OUT, "libnpudist_C_test.so")
    shutil.copyfile(ext[-1], lib + ".tmp")
    os.replace(lib + ".tmp", lib)
    pylib = sysconfig.get_config_var("LIBDIR")
    pyver = sysconfig.get_config_var("LDVERSION")
    if not glob.glob(os.path.join(pylib, f"libpython{pyver}.so*")):
        # the extension and libtorch_python need libpython's symbols to load, even unused
        pytest.skip(f"this interpreter has no shared libpython{pyver} in {pylib} (built without "
                    "--enable-shared, or Debian's libpython3-dev missing): the allocator's C++ tests need it")
    compile_flags = [f"-D_GLIBCXX_USE_CXX11_ABI={int(torch._C._GLIBCXX_USE_CXX11_ABI)}",
                     "-isystem", os.path.join(tdir, "include"),
                     "-isystem", os.path.join(tdir, "include", "torch", "csrc", "api", "include")]
    # RPATH (not RUNPATH) so the extension's own dependencies resolve through it too
    link_flags = [f"-L{OUT}", "-lnpudist_C_test", f"-L{tdir}/lib", "-ltorch_python", "-ltorch_cpu", "-lc10",
                  f"-L{pylib}", f"-lpython{pyver}", "-Wl,--disable-new-dtags", f"-Wl,-rpath,{tdir}/lib",
                  f"-Wl,-rpath,{pylib}", f"-Wl,-rpath,{OUT}"]
    return compile_flags, link_flags, ext[-1]


def _compiler():
    cxx = os.environ.get("CXX") or shutil.which("c++") or shutil.which("g++")
    if not cxx:
        pytest.fail("no C++ compiler: install g++ (the extension's build needs it too)")
    ccache = shutil.which("ccache")
    return [ccache, cxx] if ccache else [cxx]


def _inputs_hash(sources, extra):
    h = hashlib.sha256(" ".join(FLAGS + extra).encode())
    headers = sorted(os.path.relpath(p, REPO) for p in glob.glob(os.path.join(REPO, "csrc", "**", "*.h"), recursive=True))
    headers += sorted(os.path.relpath(p, REPO) for p in glob.glob(os.path.join(HERE, "*.h")))
    for rel in list(sources) + headers:
        with open(os.path.join(REPO, rel), "rb") as f:
            h.update(rel.encode() + b"\0" + f.read())
    return h.hexdigest()[:16]


def build(name):
    """Path of binary `name`, compiled now if its inputs changed since the last build."""
    sources, on_extension = BINARIES[name]
    os.makedirs(OUT, exist_ok=True)
    binary = os.path.join(OUT, name)
    stamp = binary + ".stamp"
    compile_flags, link_flags, ext = _torch_flags() if on_extension else ([], [], None)
    extra = compile_flags + link_flags + ([str(os.stat(ext).st_mtime_ns)] if ext else [])
    digest = _inputs_hash(sources, extra)
    if os.path.exists(binary) and os.path.exists(stamp) and open(stamp).read() == digest:
        return binary
    tmp = f"{binary}.{os.getpid()}.tmp"
    cmd = _compiler() + FLAGS + compile_flags + sources + ["-o", tmp] + link_flags
    r = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=600)
    if r.returncode:
        pytest.fail(f"building {name} failed ({' '.join(cmd)}):\n{r.stderr[-4000:]}")
    os.replace(tmp, binary)  # atomic: a concurrent run never sees half a binary
    with open(stamp, "w") as f:
        f.write(digest)
    return binary


def _cases(name):
    src = open(os.path.join(HERE, name + ".cpp")).read()
    return re.findall(r"^TEST\((\w+)\)", src, re.MULTILINE)


def _selected(binary, select):
    cases = _cases(binary)
    if select is None:
        return cases
    if select.startswith("!"):
        return [c for c in cases if not c.startswith(select[1:])]
    return [c for c in cases if c.startswith(select)]


@pytest.fixture(scope="module")
def results():
    """Runs each run once; maps run -> ({case: failure lines, [] = passed}, the process)."""
    out = {}
    for name, binary, env_over, select in RUNS:
        env = dict(os.environ)
        for k, v in env_over.items():
            if v is None:
                env.pop(k, None)
            else:
                env[k] = v
        try:
            path = build(binary)
        except pytest.skip.Exception as e:  # this run only; the others still run
            out[name] = ({}, e)
            continue
        r = subprocess.run([path] + _selected(binary, select), cwd=REPO, env=env, capture_output=True,
                           text=True, timeout=120)
        seen = {}
        for line in r.stdout.splitlines():
            kind, _, rest = line.partition(" ")
            case = rest.split(":", 1)[0]
            if kind == "PASS":
                seen.setdefault(case, [])
            elif kind == "FAIL":
                seen.setdefault(case, []).append(rest)
        out[name] = (seen, r)
    return out


@pytest.mark.parametrize("name,case", [(run, c) for run, b, _, sel in RUNS for c in _selected(b, sel)])
def test_cpp(results, name, case):
    seen, run = results[name]
    if isinstance(run, pytest.skip.Exception):
        pytest.skip(str(run))
    if case not in seen:
        pytest.fail(f"{name} did not report {case} (exit {run.returncode}):\n{run.stdout[-2000:]}\n{run.stderr[-2000:]}")
    assert not seen[case], "\n".join(seen[case])
