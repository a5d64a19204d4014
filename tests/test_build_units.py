"""What keeps the extension's cold build short (docs/benchmarks/setup_time.md), checked on
the source.

- The units that need nothing of torch (the driver, the environment and shm-name utilities, the
  fault-injection parser, hccl's pickle codec and shared-memory waits) include no torch, ATen,
  c10, pybind11 or Python header, directly or through npudist's own headers: they compile in a
  second or two and can be tested and reused without libtorch. Every unit under csrc/driver/
  and csrc/util/ belongs to this list, so a new file there is checked without an edit here.
- No unit includes torch/extension.h, torch/torch.h or torch/all.h (all of torch's C++ API
  and its Python bindings): a unit includes the headers it uses.
- csrc/precompiled.h (the precompiled header setup.py force-includes into every unit) holds only
  third-party headers: a project header in it would make any edit to that header rebuild every
  unit, and the PCH would go stale between builds.
- setup.py compiles every .cpp under csrc/, so a unit added anywhere is built (and gets the PCH)
  without editing the build.
"""
from __future__ import annotations

import glob
import os
import re

from csrc_includes import THIRD_PARTY, includes, third_party_includes

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CSRC = os.path.join(REPO, "csrc")

TORCH_FREE = {
    "core/fault_inject.cpp",
    "hccl/pickle.cpp",
    "hccl/shm_wait.cpp",
}
"""Units outside csrc/driver and csrc/util that must stay free of torch's headers."""
TORCH_FREE_DIRS = ("driver/", "util/")

WHOLE_TORCH = {"torch/extension.h", "torch/torch.h", "torch/all.h"}


def _units():
    return sorted(os.path.relpath(p, CSRC) for p in glob.glob(os.path.join(CSRC, "**", "*.cpp"), recursive=True))


def test_torch_free_units_include_no_torch_header():
    units = _units()
    listed = TORCH_FREE | {u for u in units if u.startswith(TORCH_FREE_DIRS)}
    missing = sorted(TORCH_FREE - set(units))
    assert not missing, f"TORCH_FREE names units that no longer exist: {missing}; update the list"
    bad = {u: sorted(third_party_includes(os.path.join(CSRC, u))) for u in sorted(listed)}
    bad = {u: found for u, found in bad.items() if found}
    assert not bad, ("units that must compile without torch include torch/ATen/c10/pybind11/Python headers "
                     f"(unit: [(file, header)]): {bad}; move the torch-facing code to another unit")


def test_no_unit_includes_the_whole_of_torch():
    bad = []
    for path in glob.glob(os.path.join(CSRC, "**", "*.*"), recursive=True):
        bad += [(os.path.relpath(path, CSRC), n) for n in includes(path) if n in WHOLE_TORCH]
    assert not bad, f"include the headers a unit uses, not all of torch: {bad}"


def test_precompiled_header_holds_only_third_party_headers():
    names = includes(os.path.join(CSRC, "precompiled.h"))
    assert names, "csrc/precompiled.h includes nothing"
    own = [n for n in names if not THIRD_PARTY.search(n)]
    assert not own, f"csrc/precompiled.h includes npudist headers {own}: an edit to one would rebuild every unit"


def test_setup_compiles_every_unit():
    with open(os.path.join(REPO, "setup.py")) as f:
        text = f.read()
    m = re.search(r"def sources\(\):\n(.*?)\n\n", text, re.S)
    assert m, "setup.py has no sources() function"
    namespace = {}
    exec("import glob, os\n" + m.group(0), namespace)  # setup.py's own function, run as written
    cwd = os.getcwd()
    try:
        os.chdir(REPO)
        built = {os.path.relpath(p, "csrc") for p in namespace["sources"]()}
    finally:
        os.chdir(cwd)
    assert built == set(_units()), f"setup.py does not build {sorted(set(_units()) - built)}"
