"""C++ unit tests of the layers below torch (tests/cpp/*.cpp, harness tests/cpp/unit.h).

Each binary is built here with the extension's compiler (``$CXX`` or ``c++``, through ccache
when installed) into build/cpptests/, and rebuilt only when its sources change; each C++
TEST becomes one pytest case. Building the driver's tests takes ~10 s once.
"""
from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HERE = os.path.join(REPO, "tests", "cpp")
OUT = os.path.join(REPO, "build", "cpptests")

# binary -> (sources relative to the repository, environment it runs with)
BINARIES = {
    "test_driver": (
        ["csrc/util/env.cpp", "csrc/driver/config.cpp", "csrc/driver/host_driver.cpp",
         "csrc/driver/stream_queue.cpp", "tests/cpp/test_driver.cpp"],
        # the driver reads its configuration once per process
        {"NPUDIST_DEVICE_COUNT": "2", "NPUDIST_DEVICE_MEMORY": "64MiB", "ASCEND_RT_VISIBLE_DEVICES": None},
    ),
}
FLAGS = ["-std=c++20", "-O1", "-g0", "-Wall", "-Wno-sign-compare", "-pthread", "-Icsrc", "-Itests/cpp"]


def _compiler():
    cxx = os.environ.get("CXX") or shutil.which("c++") or shutil.which("g++")
    if not cxx:
        pytest.fail("no C++ compiler: install g++ (the extension's build needs it too)")
    ccache = shutil.which("ccache")
    return [ccache, cxx] if ccache else [cxx]


def _inputs_hash(sources):
    h = hashlib.sha256(" ".join(FLAGS).encode())
    headers = []
    for d in ("csrc/util", "csrc/driver", "tests/cpp"):
        headers += sorted(os.path.join(d, f) for f in os.listdir(os.path.join(REPO, d)) if f.endswith(".h"))
    for rel in list(sources) + headers:
        with open(os.path.join(REPO, rel), "rb") as f:
            h.update(rel.encode() + b"\0" + f.read())
    return h.hexdigest()[:16]


def build(name):
    """Path of binary `name`, compiled now if its sources changed since the last build."""
    sources, _ = BINARIES[name]
    os.makedirs(OUT, exist_ok=True)
    binary = os.path.join(OUT, name)
    stamp = binary + ".stamp"
    digest = _inputs_hash(sources)
    if os.path.exists(binary) and os.path.exists(stamp) and open(stamp).read() == digest:
        return binary
    tmp = f"{binary}.{os.getpid()}.tmp"
    cmd = _compiler() + FLAGS + sources + ["-o", tmp]
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


@pytest.fixture(scope="module")
def results():
    """Runs each binary once; maps (binary, case) -> list of failure lines ([] = passed)."""
    out = {}
    for name, (_, env_over) in BINARIES.items():
        env = dict(os.environ)
        for k, v in env_over.items():
            if v is None:
                env.pop(k, None)
            else:
                env[k] = v
        r = subprocess.run([build(name)], cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
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


@pytest.mark.parametrize("name,case", [(b, c) for b in BINARIES for c in _cases(b)])
def test_cpp(results, name, case):
    seen, run = results[name]
    if case not in seen:
        pytest.fail(f"{name} did not report {case} (exit {run.returncode}):\n{run.stdout[-2000:]}\n{run.stderr[-2000:]}")
    assert not seen[case], "\n".join(seen[case])
