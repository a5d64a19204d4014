"""Unity build of csrc/: the units of one layer compiled as a few larger translation units.

Most of a torch-facing unit's compile time is torch's headers (parsing them, and instantiating and
emitting the inline code they define), paid once per translation unit: csrc/hccl's 21 units
took 168 s of compiler CPU one by one and 49 s as one translation unit
(docs/benchmarks/build_time.md). setup.py therefore compiles generated files
``<out_dir>/unity_<layer>_<k>.cpp`` that ``#include`` the units of one layer (the first folder under
csrc/: bindings, core, hccl, ...), each chunk a contiguous run of the layer's units in path order
of about ``MAX_CHUNK_LINES`` source lines, so that an edit rebuilds one chunk, a new file moves few
boundaries, and the 2 compile jobs finish close together.

Rules that keep a chunk equivalent to its units compiled apart (the build fails loudly otherwise:
a name defined twice in one chunk is a redefinition error):

- names in anonymous namespaces and ``static`` functions must be unique within a layer: a helper
  two units share belongs in a header (docs/troubleshooting.md, "redefinition of ... {anonymous}");
- a unit with ``#pragma GCC optimize``, ``target`` or ``push_options`` is compiled alone (the pragma
  would apply to the units after it);
- a unit that ``#define``s a macro before one of its ``#include``s (it configures a header for
  itself, e.g. NumPy's C API table) goes first in its chunk, one such unit per chunk;
- a unit may opt out with a line ``// npudist-build: own-unit`` (say why beside it).

``NPUDIST_BUILD_UNITY=0`` compiles every unit alone (the build before this file), e.g. to make a
one-file edit rebuild only that file while iterating on it. Standard library only; not installed.
"""
from __future__ import annotations

import os
import re

MAX_CHUNK_LINES = 2200
"""About the source lines of one chunk. With torch's headers costing ~5 s per translation unit and
the units' own code ~8 ms per line (hccl, -O2), chunks of ~2,200 lines cost ~20-25 s of CPU each:
large enough that headers are a small share, small enough that one edit rebuilds ~20 s and that
the chunks balance over 2 jobs."""

_ALONE = re.compile(r"^\s*#\s*pragma\s+GCC\s+(optimize|target|push_options)\b|//\s*npudist-build:\s*own-unit",
                    re.MULTILINE)
_DIRECTIVE = re.compile(r"^\s*#\s*(include|define)\b", re.MULTILINE)


def _read(path):
    with open(path, errors="replace") as f:
        return f.read()


def compiled_alone(path):
    """Whether the unit must be its own translation unit (a GCC optimize/target pragma, or opted out)."""
    return bool(_ALONE.search(_read(path)))


def defines_before_includes(path):
    """Whether the unit #defines a macro before one of its #includes (the macro configures that
    header for this unit, so the unit must lead its chunk: the header is not read a second time)."""
    kinds = [m.group(1) for m in _DIRECTIVE.finditer(_read(path))]
    return "define" in kinds and "include" in kinds[kinds.index("define"):]


def layer_of(source, csrc="csrc"):
    """The layer of a unit: its first folder under csrc/ (``csrc/core/aten/x.cpp`` -> ``core``)."""
    rel = os.path.relpath(source, csrc).replace(os.sep, "/")
    return rel.split("/", 1)[0] if "/" in rel else ""


def _lines(path):
    return _read(path).count("\n") + 1


def plan(sources, csrc="csrc", max_lines=MAX_CHUNK_LINES):
    """Groups ``sources`` (paths of .cpp files under ``csrc``) into chunks.

    Returns a list of (name, [source, ...]): ``name`` is ``unity_<layer>_<k>`` for a generated
    chunk, None for a unit compiled as itself. Every source is in exactly one entry; the result
    depends only on the sources' paths, contents and sizes. Chunks come largest first (ninja starts
    them in that order, so the longest does not start last)."""
    by_layer = {}
    out = []
    for src in sorted(sources):
        if compiled_alone(src):
            out.append((None, [src]))
        else:
            by_layer.setdefault(layer_of(src, csrc), []).append(src)
    for layer, units in sorted(by_layer.items()):
        sizes = [_lines(u) for u in units]
        n_chunks = max(1, round(sum(sizes) / max_lines))
        target = sum(sizes) / n_chunks
        runs, run, acc = [], [], 0
        for unit, size in zip(units, sizes, strict=True):
            # cut before this unit when the run is full and the cut lands nearer the target
            if run and len(runs) < n_chunks - 1 and acc + size / 2 > target:
                runs.append(run)
                run, acc = [], 0
            run.append(unit)
            acc += size
        runs.append(run)
        k = 0
        for run in runs:
            leaders = [u for u in run if defines_before_includes(u)]
            # one header-configuring unit leads the chunk; any other one is compiled alone
            rest = [u for u in run if u not in leaders]
            for extra in leaders[1:]:
                out.append((None, [extra]))
            members = leaders[:1] + rest
            if len(members) == 1:
                out.append((None, members))
            elif members:
                out.append((f"unity_{layer or 'top'}_{k}", members))
                k += 1
    return sorted(out, key=lambda c: -sum(_lines(u) for u in c[1]))


def render(name, members, csrc="csrc"):
    """The text of the generated chunk ``name``: one #include per member, named relative to csrc/
    (on the include path), so compile errors name the unit's own file and line."""
    lines = [f"// {name}: generated by setup.py (csrc_unity.py); edit the units, not this file.",
             "// One translation unit for the units below (docs/benchmarks/build_time.md)."]
    lines += [f'#include "{os.path.relpath(m, csrc).replace(os.sep, "/")}"' for m in members]
    return "\n".join(lines) + "\n"


def write(chunks, out_dir, csrc="csrc"):
    """Writes the generated chunks of ``plan`` into ``out_dir`` and returns the sources to compile
    (generated files and units compiled alone). A file is rewritten only when its text changes, so
    ninja rebuilds a chunk only when its membership or one of its units changed; files of chunks
    that no longer exist are removed."""
    os.makedirs(out_dir, exist_ok=True)
    sources, kept = [], set()
    for name, members in chunks:
        if name is None:
            sources.append(members[0])
            continue
        path = os.path.join(out_dir, name + ".cpp")
        text = render(name, members, csrc)
        if not os.path.exists(path) or _read(path) != text:
            with open(path, "w") as f:
                f.write(text)
        sources.append(path)
        kept.add(name + ".cpp")
    for stale in os.listdir(out_dir):
        if stale.startswith("unity_") and stale.endswith(".cpp") and stale not in kept:
            os.remove(os.path.join(out_dir, stale))
    return sources
