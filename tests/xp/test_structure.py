"""npudist.xp's import graph: no cycle among modules, and a core that imports nothing above it."""
import ast
import pathlib
import re

import npudist.xp
from tests.import_cycles import strongly_connected

PKG = pathlib.Path(npudist.xp.__file__).parent
NAME = "npudist.xp"
# the core (CuPy's cupy._core): dtypes, settings, operand conversion, index normalisation, the ufunc
# engine and ndarray itself
CORE = {"_dtypes", "_config", "_unsigned", "_convert", "_indexing", "_ufunc", "_host", "_ufunc_kernels", "_negview", "_memory", "_device", "_flatiter", "_overlap", "_core", "_protocols", "_bytes_views", "_object_compare", "_native"}


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


# ... and every module of the core package (npudist/xp/_core/)
CORE |= {m for m in _modules() if m.startswith("_core.")}


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
    for m in CORE - {"_core", "_core._ndarray"}:
        assert full[m] <= CORE, f"core module {m} imports {sorted(full[m] - CORE)}"


def whole_graph_violations():
    """What issue #41's target forbids in the whole import graph (imports inside functions and
    methods included): each core module's import of a module above the core, and each module caught
    in a circle. Returns sorted strings, one per violation."""
    full = _graph(module_level_only=False)
    bad = [f"core module {m} imports {d}" for m in sorted(CORE) for d in sorted(full[m] - CORE)]
    for comp in strongly_connected(full):
        bad += [f"{m} is in a circle of {len(comp)} modules: {', '.join(comp)}" for m in comp]
    return sorted(bad)


def test_whole_graph_has_no_circle_and_a_closed_core():
    # issue #41's target: 30 violations before the core became a package, 0 since the manipulation,
    # indexing and creation routines behind ndarray's methods moved into it
    bad = whole_graph_violations()
    assert not bad, f"{len(bad)} violations:\n  " + "\n  ".join(bad)


def test_whole_graph_check_sees_function_level_imports():
    # a lazy import inside a method closes a circle the module-level check misses
    src = "class A:\n    def f(self):\n        from . import b\n"
    mods = {"a": pathlib.Path("a.py"), "b": pathlib.Path("b.py")}
    assert _imports(ast.parse(src), "a", mods, True) == set()
    assert _imports(ast.parse(src), "a", mods, False) == {"b"}
    assert strongly_connected({"a": {"b"}, "b": {"a"}, "c": {"a"}}) == [["a", "b"]]


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


# one call per routine-backed ndarray method (the others only touch the core by construction)
_METHOD_CALLS = {
    "sum": (), "prod": (), "max": (), "min": (), "argmax": (), "argmin": (), "all": (), "any": (),
    "cumsum": (), "cumprod": (), "ptp": (), "mean": (), "var": (), "std": (), "clip": (0, 1), "round": (),
    "conj": (), "conjugate": (), "reshape": (3, 2), "transpose": (), "swapaxes": (0, 1), "squeeze": (),
    "ravel": (), "flatten": (), "repeat": (2,), "diagonal": (), "trace": (), "nonzero": (), "take": ([0],),
    "put": ([0], 1.0), "choose": None, "compress": ([True, False],), "sort": (), "argsort": (),
    "partition": (1,), "argpartition": (1,), "searchsorted": None, "dot": None, "__matmul__": None, "__rmatmul__": None, "__imatmul__": None,
    "__array_namespace__": (), "__reduce__": (), "copy": (), "astype": ("float32",), "view": (), "fill": (0.0,),
}


def _family_frames(fn):
    """Python files of npudist.xp outside the core whose code runs during fn()."""
    import sys

    core_files = {str(p) for m, p in _modules().items() if m in CORE}
    seen = set()

    def prof(frame, event, arg):
        f = frame.f_code.co_filename
        if event == "call" and f.startswith(str(PKG)) and f not in core_files:
            seen.add(pathlib.Path(f).relative_to(PKG).as_posix())

    from npudist.xp import _host

    # with NumPy's paths off, numpy_first's C objects call the Python function they decorate, so
    # a routine that runs in C (no frame of its own) is seen too
    enabled, _host.ENABLED = _host.ENABLED, False
    sys.setprofile(prof)
    try:
        fn()
    finally:
        sys.setprofile(None)
        _host.ENABLED = enabled
    return seen


def ndarray_methods_reaching_families():
    """{method: family files whose code runs} for each ndarray method that leaves the core."""
    import npudist.xp as xp

    out = {}
    for name, args in _METHOD_CALLS.items():
        a = xp.arange(6, dtype=xp.float64).reshape(2, 3)
        if args is None:    # the ones needing an array argument
            other = {"choose": (xp.zeros(6, dtype=xp.int64).reshape(2, 3), [a, a]),
                     "searchsorted": (xp.arange(4.0), xp.arange(2.0)), "dot": (a, a.T), "__matmul__": (a, a.T), "__rmatmul__": (a, a.T),
                     "__imatmul__": (xp.eye(3), xp.eye(3))}[name]
            a, args = other[0], other[1:]
        if name in ("take", "compress", "put", "choose"):
            args = tuple(xp.asarray(x) if isinstance(x, list) else x for x in args)
        files = _family_frames(lambda n=name, a=a, args=args: getattr(a, n)(*args))
        if files:
            out[name] = sorted(files)
    return out


def test_ndarray_methods_run_only_core_code():
    # issue #41's target: 38 methods ran family code before the routines moved into the core, 0 now
    bad = ndarray_methods_reaching_families()
    assert not bad, f"{len(bad)} ndarray methods run family-module code: {bad}"


def test_method_calls_cover_every_routine_backed_method():
    # every ndarray method that calls one of the core's routine modules is among _METHOD_CALLS,
    # so the run-time check above calls it
    src = (PKG / "_core" / "_ndarray.py").read_text()
    routine_modules = {m.split(".")[1] for m in _modules() if m.startswith("_core.") and m != "_core._ndarray"}
    cls = next(n for n in ast.parse(src).body if isinstance(n, ast.ClassDef) and n.name == "ndarray")
    backed = set()
    for f in cls.body:
        if isinstance(f, ast.FunctionDef) and any(
                isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id in routine_modules
                for n in ast.walk(f)):
            backed.add(f.name)
    assert backed, "found no routine-backed method: the walk is broken"
    assert backed <= set(_METHOD_CALLS), f"methods the run-time check does not call: {sorted(backed - set(_METHOD_CALLS))}"


def test_operators_are_defined_in_the_class_body():
    # issue #41: ndarray's operators are assigned in its class statement (ufunc_operator), not
    # bound onto the class from outside after it
    from npudist.xp._core._operators import OPERATORS

    src = (PKG / "_core" / "_ndarray.py").read_text()
    cls = next(n for n in ast.parse(src).body if isinstance(n, ast.ClassDef) and n.name == "ndarray")
    defined = {t.id for n in cls.body if isinstance(n, ast.Assign) for t in n.targets if isinstance(t, ast.Name)}
    defined |= {n.name for n in cls.body if isinstance(n, ast.FunctionDef)}
    assert set(OPERATORS) <= defined, sorted(set(OPERATORS) - defined)
    for m, p in _modules().items():
        assert not re.search(r"setattr\(\s*ndarray\b|\bndarray\.__\w+__\s*=[^=]", p.read_text()), \
            f"{m} sets an attribute of ndarray from outside its class statement"
