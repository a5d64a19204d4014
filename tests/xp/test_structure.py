"""npudist.xp's import graph: no cycle among modules, and a core that imports nothing above it."""
import ast
import pathlib
import re

import npudist.xp

PKG = pathlib.Path(npudist.xp.__file__).parent
NAME = "npudist.xp"
# the core (CuPy's cupy._core): dtypes, settings, operand conversion, index normalisation, the ufunc
# engine and ndarray itself
CORE = {"_dtypes", "_config", "_unsigned", "_convert", "_indexing", "_ufunc", "_host", "_ufunc_kernels", "_negview", "_memory", "_device", "_flatiter", "_overlap", "_core", "_operators", "_protocols", "_bytes_views", "_object_compare"}


def _modules():
    """Dotted module names under npudist.xp ('_core', '_manipulation.join', ...) -> file."""
    out = {}
    for p in PKG.rglob("*.py"):
        parts = list(p.relative_to(PKG).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        if parts:
            out[".".join(parts)] = p
    return out


def _resolve(name, mods):
    """The module a dotted name refers to (an attribute of a module counts as that module)."""
    parts = name.split(".")
    while parts:
        if ".".join(parts) in mods:
            return ".".join(parts)
        parts = parts[:-1]
    return None


def _imports(tree, here, mods, module_level_only):
    """npudist.xp modules imported by tree, the code of module ``here``."""
    pkg = here.split(".")[:-1] if mods[here].name != "__init__.py" else here.split(".")
    found = set()
    if module_level_only:
        nodes, stack = [], list(tree.body) if hasattr(tree, "body") else [tree]
        while stack:   # module body and class bodies run at import; function bodies do not
            n = stack.pop()
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            nodes.append(n)
            stack.extend(ast.iter_child_nodes(n))
    else:
        nodes = list(ast.walk(tree))
    for n in nodes:
        if isinstance(n, ast.ImportFrom):
            if n.level:
                base = pkg[:len(pkg) - (n.level - 1)] + ((n.module or "").split(".") if n.module else [])
                base = ".".join(base)
            elif (n.module or "").startswith(NAME):
                base = n.module[len(NAME) + 1:]
            else:
                continue
            for a in n.names:
                r = _resolve(f"{base}.{a.name}" if base else a.name, mods) or (_resolve(base, mods) if base else None)
                if r:
                    found.add(r)
        elif isinstance(n, ast.Import):
            for a in n.names:
                if a.name.startswith(NAME + "."):
                    r = _resolve(a.name[len(NAME) + 1:], mods)
                    if r:
                        found.add(r)
    return found


def _graph(module_level_only=True):
    mods = _modules()
    return {m: _imports(ast.parse(p.read_text()), m, mods, module_level_only) - {m} for m, p in mods.items()}


def _cycle(graph):
    state, path = {}, []

    def visit(m):
        state[m] = 1
        path.append(m)
        for d in sorted(graph[m]):
            if state.get(d) == 1:
                return path[path.index(d):] + [d]
            if d not in state:
                c = visit(d)
                if c:
                    return c
        state[m] = 2
        path.pop()
        return None
    for m in sorted(graph):
        if m not in state:
            c = visit(m)
            if c:
                return c
    return None


def test_no_import_cycle():
    cycle = _cycle(_graph())
    assert cycle is None, "import cycle in npudist.xp: " + " -> ".join(cycle)


def test_cycle_detector_detects():
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None


def test_core_imports_nothing_above_it():
    g = _graph()
    for m in CORE:
        assert g[m] <= CORE, f"core module {m} imports {sorted(g[m] - CORE)} at import time"
    # below ndarray nothing reaches up, not even inside functions
    full = _graph(module_level_only=False)
    for m in CORE - {"_core"}:
        assert full[m] <= CORE, f"core module {m} imports {sorted(full[m] - CORE)}"
    # ndarray's routine methods reach their family modules only through the helpers at the end of _core
    tree = ast.parse((PKG / "_core.py").read_text())
    late = {f.name for f in tree.body if isinstance(f, ast.FunctionDef) and _imports(f, "_core", _modules(), False) - CORE}
    assert late == {"_reductions", "_statistics", "_manipulation", "_misc", "_indexing_routines", "_sorting",
                    "_linalg"}


def test_manipulation_split_by_topic():
    subs = {m.split(".")[1] for m in _modules() if m.startswith("_manipulation.")}
    assert {"shape", "transpose", "dims", "join", "split", "tiling", "rearrange", "add_remove"} <= subs


def test_one_unwrapping_helper():
    for m, p in _modules().items():
        src = p.read_text()
        if m == "_convert":      # where tensor_of itself lives
            src = src.replace(src[src.index("def tensor_of"):src.index("def is_python_scalar")], "")
        assert not re.search(r"(\w+)\._t if isinstance\(\1, \w+\) else as_tensor\(\1\)", src), \
            f"{m} has its own copy of the tensor-unwrapping helper (use tensor_of)"
