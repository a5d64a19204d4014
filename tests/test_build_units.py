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
- setup.py compiles every .cpp under csrc/, so a unit added anywhere is built (in its layer's
  unity chunk, csrc_unity.py) without editing the build; the unity plan puts every unit in exactly
  one translation unit of its own layer and follows csrc_unity.py's rules.
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


# --- the unity build (csrc_unity.py) --------------------------------------------------------


def _plan():
    import csrc_unity

    cwd = os.getcwd()
    try:
        os.chdir(REPO)
        units = sorted(glob.glob(os.path.join("csrc", "**", "*.cpp"), recursive=True))
        return units, csrc_unity.plan(units)
    finally:
        os.chdir(cwd)


def test_unity_plan_builds_every_unit_once_within_its_layer():
    import csrc_unity

    units, chunks = _plan()
    members = [m for _, ms in chunks for m in ms]
    assert sorted(members) == units, "every .cpp is in exactly one translation unit"
    for name, ms in chunks:
        layers = {csrc_unity.layer_of(m) for m in ms}
        assert len(layers) == 1, f"{name} mixes layers {layers}: a chunk holds the units of one layer"
        if name is None:
            assert len(ms) == 1
        else:
            assert name.startswith(f"unity_{layers.pop()}_") and len(ms) > 1, (name, ms)


def test_unity_plan_keeps_pragmas_alone_and_header_configuring_units_first(tmp_path):
    import csrc_unity

    layer = tmp_path / "csrc" / "hccl"
    layer.mkdir(parents=True)
    (layer / "a.cpp").write_text('#include "hccl/a.h"\nint a() { return 1; }\n')
    (layer / "b.cpp").write_text('#include "hccl/b.h"\n#define CONFIGURE_X 1\n#include "x.h"\nint b();\n')
    (layer / "c.cpp").write_text('#pragma GCC optimize("O3")\n#include "hccl/c.h"\n')
    (layer / "d.cpp").write_text("// npudist-build: own-unit (a test)\nint d();\n")
    (layer / "e.cpp").write_text("int e();\n")
    csrc = str(tmp_path / "csrc")
    srcs = sorted(str(p) for p in layer.iterdir())
    chunks = csrc_unity.plan(srcs, csrc=csrc)
    alone = sorted(os.path.basename(ms[0]) for name, ms in chunks if name is None)
    assert alone == ["c.cpp", "d.cpp"], chunks
    (name, ms), = [(n, ms) for n, ms in chunks if n is not None]
    assert name == "unity_hccl_0" and [os.path.basename(m) for m in ms] == ["b.cpp", "a.cpp", "e.cpp"]
    out = tmp_path / "gen"
    sources = csrc_unity.write(chunks, str(out), csrc=csrc)
    gen = out / "unity_hccl_0.cpp"
    assert str(gen) in sources and len(sources) == 3
    assert gen.read_text().splitlines()[2:] == ['#include "hccl/b.cpp"', '#include "hccl/a.cpp"',
                                                '#include "hccl/e.cpp"']
    # unchanged text is not rewritten (ninja would rebuild the chunk), a chunk gone is removed
    os.utime(gen, (1, 1))
    csrc_unity.write(chunks, str(out), csrc=csrc)
    assert gen.stat().st_mtime == 1
    (out / "unity_gone_0.cpp").write_text("")
    csrc_unity.write(chunks, str(out), csrc=csrc)
    assert not (out / "unity_gone_0.cpp").exists()


def test_unity_chunks_split_a_large_layer_into_runs():
    import csrc_unity

    units, chunks = _plan()
    for name, ms in chunks:
        if name is None:
            continue
        layer = csrc_unity.layer_of(ms[0])
        rest = [m for m in ms if not csrc_unity.defines_before_includes(m)]
        assert rest == sorted(rest), f"{name}: members in path order after the one leading unit"
        lines = sum(open(os.path.join(REPO, m)).read().count("\n") for m in ms)
        total = sum(open(os.path.join(REPO, u)).read().count("\n") for u in units if csrc_unity.layer_of(u) == layer)
        assert lines <= max(2 * csrc_unity.MAX_CHUNK_LINES, total), (name, lines)
