"""The layer rules of docs/architecture.md, checked on the source.

C++ (csrc/): a file may include headers of its own folder and of the folders its folder is
allowed to depend on (CSRC_ALLOWED), nothing above. Python (npudist/, launcher/npurun/): a
module may import its own unit and units of a lower layer (PY_LAYERS); none imports upward,
and no two modules import each other at module level (a circle), directly or through others.

Where the code deliberately crosses a line, the exception is listed here with its reason;
anything else fails with the file, the line and the rule it breaks.
"""
from __future__ import annotations

import ast
import functools
import os
import re
import sys

from tests.import_cycles import strongly_connected

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CSRC = os.path.join(REPO, "csrc")

# --- C++ ------------------------------------------------------------------------------------

# A csrc file's layer is its top folder, except the profiler's hook headers: the device core
# and hccl call them to record events, so they sit below the core (they include nothing of
# npudist's but each other), while the profiler's implementation (.cpp files) sits above hccl.
PROFILER_HOOK_HEADERS = {
    "profiler/recorder.h", "profiler/device_hooks.h", "profiler/memory_events.h", "profiler/collective_events.h",
    "profiler/kernel_scope.h",  # the kernels' event helper over recorder.h and device_hooks.h
}

# layer -> the layers it may include (besides itself). The order, bottom up:
#   util < driver < profiler_hooks < core (device, allocator, aten, graph) < hccl < profiler < bindings,
#   and core < xp < bindings (xp beside hccl and the profiler: none of them includes the other)
CSRC_ALLOWED = {
    "util": set(),
    "driver": {"util"},
    "profiler_hooks": set(),
    "core": {"util", "driver", "profiler_hooks"},
    # hccl reaches the device through core (streams, deferred errors, ipc), never the driver's internals
    "hccl": {"util", "profiler_hooks", "core"},
    "profiler": {"util", "profiler_hooks", "core", "hccl"},
    # npudist.xp's C code (NumPy's C API) sits above the device core and below nothing but the
    # bindings: _C loads without NumPy, npudist.xp registers it (_C._xp_register)
    "xp": {"util", "core"},
    "bindings": {"util", "driver", "profiler_hooks", "core", "hccl", "profiler", "xp"},
}

# (including file, included file) -> reason. Deliberate crossings; keep this short.
CSRC_EXCEPTIONS: dict[tuple[str, str], str] = {}

_INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.MULTILINE)


def csrc_layer(rel: str) -> str:
    """The layer of a path relative to csrc/ (e.g. "core/allocator/caching_allocator.cpp" -> "core")."""
    if rel in PROFILER_HOOK_HEADERS:
        return "profiler_hooks"
    top = rel.split("/", 1)[0]
    if top not in CSRC_ALLOWED:
        raise AssertionError(f"csrc/{rel}: folder {top!r} has no layer; add it to CSRC_ALLOWED in {__file__}")
    return top


def csrc_includes():
    """Yields (file, line, included file) for every quoted include that names a file in csrc/."""
    for dirpath, _, filenames in os.walk(CSRC):
        for name in sorted(filenames):
            if not name.endswith((".h", ".cpp")):
                continue
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, CSRC).replace(os.sep, "/")
            text = open(path, encoding="utf-8").read()
            for m in _INCLUDE.finditer(text):
                inc = m.group(1)
                line = text.count("\n", 0, m.start()) + 1
                if os.path.exists(os.path.join(CSRC, inc)):
                    yield rel, line, inc
                elif os.path.exists(os.path.join(dirpath, inc)):  # a sibling, named relative to the file
                    yield rel, line, os.path.relpath(os.path.join(dirpath, inc), CSRC).replace(os.sep, "/")


def csrc_violations():
    bad = []
    for rel, line, inc in csrc_includes():
        src, dst = csrc_layer(rel), csrc_layer(inc)
        if src == dst or dst in CSRC_ALLOWED[src] or (rel, inc) in CSRC_EXCEPTIONS:
            continue
        bad.append(f"csrc/{rel}:{line} includes {inc}: layer {src!r} may include only "
                   f"{sorted(CSRC_ALLOWED[src] | {src})}, not {dst!r}")
    return bad


def test_csrc_layers_form_an_order():
    # the allowed map itself has no circle (else "above" means nothing)
    seen, order = set(), []

    def visit(layer, path):
        assert layer not in path, f"circular layer rule: {' -> '.join(path + [layer])}"
        if layer in seen:
            return
        for dep in CSRC_ALLOWED[layer]:
            visit(dep, path + [layer])
        seen.add(layer)
        order.append(layer)

    for layer in CSRC_ALLOWED:
        visit(layer, [])
    assert set(order) == set(CSRC_ALLOWED)


def test_csrc_includes_respect_the_layers():
    bad = csrc_violations()
    assert not bad, "a csrc file includes a layer above its own (docs/architecture.md):\n  " + "\n  ".join(bad)


def test_csrc_checker_catches_an_upward_include(tmp_path, monkeypatch):
    # hccl including the driver's internals is the example the rule exists for
    for folder, body in [("driver", ""), ("hccl", '#include "driver/host.h"\n')]:
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "host.h").write_text(body)
    monkeypatch.setattr(sys.modules[__name__], "CSRC", str(tmp_path))
    bad = csrc_violations()
    assert len(bad) == 1 and "hccl/host.h:1 includes driver/host.h" in bad[0], bad


def csrc_folders_without_owner(csrc=None):
    """csrc folders (at any depth) whose README.md is missing or does not say what it owns ("Owns:")."""
    csrc = csrc or CSRC
    bad = []
    for dirpath, dirnames, _ in os.walk(csrc):
        dirnames.sort()
        if dirpath == csrc:
            continue
        rel = os.path.relpath(dirpath, csrc).replace(os.sep, "/")
        readme = os.path.join(dirpath, "README.md")
        if not os.path.exists(readme):
            bad.append(f"csrc/{rel}/README.md is missing")
        elif "Owns:" not in open(readme, encoding="utf-8").read():
            bad.append(f"csrc/{rel}/README.md does not say what the folder owns (an 'Owns:' line)")
    return bad


def test_csrc_readme_check_catches_a_missing_one(tmp_path):
    (tmp_path / "core" / "xp").mkdir(parents=True)
    (tmp_path / "core" / "README.md").write_text("# core\n\nOwns: the device.\n")
    (tmp_path / "util").mkdir()
    (tmp_path / "util" / "README.md").write_text("# util\n")
    assert csrc_folders_without_owner(str(tmp_path)) == [
        "csrc/core/xp/README.md is missing",
        "csrc/util/README.md does not say what the folder owns (an 'Owns:' line)",
    ]


# --- Python ---------------------------------------------------------------------------------

# module prefix -> (unit, layer); the longest matching prefix wins. A module may import modules
# of its own unit and of units in a lower layer.
PY_LAYERS = {
    "npudist._C": ("extension", 0),
    "npudist._build_info": ("extension", 0),
    "npudist._env": ("base", 1),
    "npudist._compat": ("base", 1),
    "npudist._shm_names": ("base", 1),
    "npudist._cann": ("base", 1),
    # the one torch.library fragment of the "npu" op namespace (dtensor.ops and compat.ops define in it)
    "npudist._op_library": ("base", 1),
    # the NotAvailableOnThisRuntime error and the torch_npu name lists: torch.npu raises it
    "npudist.compat.names": ("base", 1),
    "npudist.compat._public_names": ("base", 1),
    # torch.npu; its graph-capture API (torch.npu.graph, NPUGraph) is part of it
    "npudist.device": ("device", 2),
    "npudist.graph.capture": ("device", 2),
    "npudist.graph": ("graph", 3),  # torch.compile support (npudist.graph.compile)
    "npudist.hccl": ("hccl", 3),
    "npudist.fault_inject": ("fault_inject", 3),
    "npudist._registration": ("registration", 4),
    "npudist.watchdog": ("watchdog", 4),
    "npudist.profiler": ("profiler", 4),
    "npudist.fsdp": ("fsdp", 4),
    "npudist.dtensor": ("dtensor", 4),
    # `import npudist` itself: loads the extension and wires the layers below together
    "npudist": ("npudist", 5),
    "npudist.compat": ("compat", 6),
    "npudist.xp": ("xp", 6),
    "npurun": ("launcher", 6),
    # the planner: reads step traces (the profiler's format) and hardware files; above all it models
    "npudist.plan": ("plan", 6),
    "npudist.testing": ("testing", 7),
}

# (importing module, imported module) -> reason. Deliberate crossings; keep this short.
PY_EXCEPTIONS: dict[tuple[str, str], str] = {}

PY_ROOTS = [(os.path.join(REPO, "npudist"), REPO), (os.path.join(REPO, "launcher", "npurun"), os.path.join(REPO, "launcher"))]


def py_unit(module: str):
    """(unit, layer) of a dotted module name, or None for modules outside npudist/npurun."""
    parts = module.split(".")
    for n in range(len(parts), 0, -1):
        hit = PY_LAYERS.get(".".join(parts[:n]))
        if hit:
            return hit
    return None


def _is_type_checking(node) -> bool:
    return isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)


def py_modules():
    """Yields (module name, path) for every module under the Python roots."""
    for root, base in PY_ROOTS:
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames[:] = [d for d in dirnames if d != "__pycache__"]
            for name in sorted(filenames):
                if name.endswith(".py"):
                    path = os.path.join(dirpath, name)
                    mod = os.path.relpath(path, base)[:-3].replace(os.sep, ".")
                    yield mod.removesuffix(".__init__"), path


@functools.lru_cache(maxsize=4)
def _known_modules(roots):
    return {m for m, _ in py_modules()} | {"npudist._C"}  # the extension, built or not


def py_imports(module: str, path: str):
    """Yields (imported module, line, at module level) for each npudist/npurun import in the file.

    ``from pkg import name`` counts as importing ``pkg.name`` when that is a module, else ``pkg``.
    Imports under ``if TYPE_CHECKING:`` are skipped (they never run)."""
    known = _known_modules(tuple(PY_ROOTS))
    is_pkg = path.endswith("__init__.py")
    package = module if is_pkg else module.rpartition(".")[0]
    tree = ast.parse(open(path, encoding="utf-8").read(), path)

    def walk(nodes, top):
        for node in nodes:
            if _is_type_checking(node):
                continue
            if isinstance(node, ast.Import):
                for a in node.names:
                    yield a.name, node.lineno, top
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")[: len(package.split(".")) - node.level + 1]
                    mod = ".".join(base + ([node.module] if node.module else []))
                else:
                    mod = node.module
                for a in node.names:
                    sub = f"{mod}.{a.name}"
                    yield (sub if sub in known else mod), node.lineno, top
            for field in ("body", "orelse", "finalbody", "handlers"):
                child = getattr(node, field, None)
                if isinstance(child, list) and not isinstance(node, ast.Import):
                    # a def's body runs later (a lazy import), an if/try's body now
                    inner_top = top and not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
                    if isinstance(node, ast.ClassDef):
                        inner_top = top
                    yield from walk(child, inner_top)

    for imported, line, top in walk(tree.body, True):
        if py_unit(imported) is not None:
            yield imported, line, top


def py_upward_imports():
    bad = []
    for mod, path in py_modules():
        src = py_unit(mod)
        for imported, line, _ in py_imports(mod, path):
            dst = py_unit(imported)
            if dst[0] == src[0] or dst[1] < src[1] or (mod, imported) in PY_EXCEPTIONS:
                continue
            bad.append(f"{os.path.relpath(path, REPO)}:{line} ({mod}, unit {src[0]!r}, layer {src[1]}) "
                       f"imports {imported} (unit {dst[0]!r}, layer {dst[1]})")
    return bad


def py_import_cycles():
    """Circles among module-level imports (lazy imports inside functions are how a circle is broken)."""
    graph = {}
    for mod, path in py_modules():
        graph[mod] = {imp for imp, _, top in py_imports(mod, path) if top and imp != mod}
    # a package's __init__ runs before its submodules: `import a.b` imports `a` first, which is no
    # circle; only edges to modules that are not the importer's own ancestors count
    for mod in graph:
        graph[mod] = {d for d in graph[mod] if not mod.startswith(d + ".") and d in graph}
    return strongly_connected(graph)


def test_every_python_module_has_a_layer():
    missing = [mod for mod, _ in py_modules() if py_unit(mod) is None]
    assert not missing, f"modules without a layer (add them to PY_LAYERS): {missing}"


def test_python_imports_never_go_upward():
    bad = py_upward_imports()
    assert not bad, "a module imports a layer above its own (docs/architecture.md):\n  " + "\n  ".join(bad)


def test_python_modules_import_no_circle():
    cycles = py_import_cycles()
    assert not cycles, "modules that import each other at module level: " + "; ".join(" <-> ".join(c) for c in cycles)


def python_packages_without_owner(roots=None):
    """Folders of Python modules under npudist/ and launcher/npurun/ that do not say what they hold:
    a package's __init__.py needs a docstring (a sentence at least), or the folder a README.md."""
    bad = []
    for root, _ in roots or PY_ROOTS:
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
            if not any(n.endswith(".py") for n in filenames) or "README.md" in filenames:
                continue
            rel = os.path.relpath(dirpath, REPO) if dirpath.startswith(REPO) else dirpath
            init = os.path.join(dirpath, "__init__.py")
            if not os.path.exists(init):
                bad.append(f"{rel}: no __init__.py and no README.md")
                continue
            doc = ast.get_docstring(ast.parse(open(init, encoding="utf-8").read(), init)) or ""
            if len(doc.split()) < 4:
                bad.append(f"{rel}/__init__.py: no docstring saying what the package holds")
    return bad


def test_every_folder_says_what_it_owns():
    """csrc folders by a README.md with an "Owns:" line, Python packages by their docstring."""
    bad = csrc_folders_without_owner() + python_packages_without_owner()
    assert not bad, "every csrc folder and Python package says what it owns (docs/architecture.md):\n  " + \
        "\n  ".join(bad)


def test_python_package_check_catches_a_silent_package(tmp_path):
    (tmp_path / "pkg" / "quiet").mkdir(parents=True)
    (tmp_path / "pkg" / "__init__.py").write_text('"""The package: holds the things it holds."""\n')
    (tmp_path / "pkg" / "quiet" / "__init__.py").write_text("x = 1\n")
    bad = python_packages_without_owner([(str(tmp_path / "pkg"), str(tmp_path))])
    assert len(bad) == 1 and bad[0].endswith("quiet/__init__.py: no docstring saying what the package holds"), bad


def test_python_checker_sees_an_upward_import():
    # the device layer importing the launcher would be upward
    assert py_unit("npudist.device.memory")[1] < py_unit("npurun.cli")[1]
    assert py_unit("npudist.graph.capture") == py_unit("npudist.device")
    assert py_unit("npudist.graph.compile.config") == ("graph", 3)
    assert py_unit("torch") is None


def test_python_checker_finds_a_circle_and_an_upward_import(tmp_path, monkeypatch):
    pkg = tmp_path / "npudist"
    (pkg / "device").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from npudist import b\n")
    (pkg / "b.py").write_text("import npudist.a\n")
    (pkg / "device" / "__init__.py").write_text("def f():\n    import npudist.xp\n")
    monkeypatch.setattr(sys.modules[__name__], "PY_ROOTS", [(str(pkg), str(tmp_path))])
    assert py_import_cycles() == [["npudist.a", "npudist.b"]]
    bad = py_upward_imports()
    assert len(bad) == 1 and "npudist/device/__init__.py:2" in bad[0] and "imports npudist.xp" in bad[0], bad
