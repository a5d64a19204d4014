"""How npudist.dtensor is put together: one module per fused op, no import cycle (lazy imports
included), defining the ops does not import DTensor, the strategies reach DTensor when it is
imported (before or after the ops), and the removed alias module paths stay gone."""
import ast
import os
import subprocess
import sys

import pytest

import npudist
from npudist.testing.multiproc import REPO, clean_env

PKG = os.path.join(os.path.dirname(npudist.__file__), "dtensor")
OP_MODULES = ("rms_norm", "rotary_mul", "swiglu", "fusion_attention")


def _module_name(path):
    rel = os.path.relpath(path, os.path.dirname(os.path.dirname(PKG)))[:-3].replace(os.sep, ".")
    return rel[:-len(".__init__")] if rel.endswith(".__init__") else rel


def _import_graph():
    """{module: {npudist.dtensor modules it imports anywhere in its body, functions included}}."""
    files = [os.path.join(d, f) for d, _, fs in os.walk(PKG) for f in fs if f.endswith(".py")]
    modules = {_module_name(f): f for f in files}
    graph = {}
    for name, path in modules.items():
        is_pkg = path.endswith("__init__.py")
        deps = set()
        for node in ast.walk(ast.parse(open(path).read())):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = name.split(".")[:len(name.split(".")) - node.level + (1 if is_pkg else 0)]
                    base = ".".join(parts + ([base] if base else []))
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]
            else:
                continue
            deps |= {t for t in targets if t in modules and t != name}
        graph[name] = deps
    return graph


def test_no_import_cycle_in_npudist_dtensor():
    graph = _import_graph()
    assert {f"npudist.dtensor.ops.{m}" for m in OP_MODULES} <= set(graph)
    state = {}

    def visit(node, path):
        state[node] = "open"
        for dep in sorted(graph[node]):
            assert state.get(dep) != "open", "import cycle: " + " -> ".join(path + [dep])
            if dep not in state:
                visit(dep, path + [dep])
        state[node] = "done"

    for node in sorted(graph):
        if node not in state:
            visit(node, [node])
    # each op module depends on the shared plumbing only, never on another op or on the old modules
    for m in OP_MODULES:
        assert graph[f"npudist.dtensor.ops.{m}"] <= {"npudist.dtensor.ops._library", "npudist.dtensor.ops._placement"}


OLD = r"""
import importlib
gone = []
for name in ["_launch", "coverage", "fused_ops", "strategies", "sweep"]:
    try:
        importlib.import_module("npudist.dtensor." + name)
    except ModuleNotFoundError:
        gone.append(name)
import npudist.testing.dtensor_coverage as c, npudist.testing.dtensor_sweep as sw, npudist.testing.multiproc as mp
print("RESULT", gone, callable(sw.run_sweep), callable(c.render), callable(mp.launch))
"""


CHECK = r"""
import sys, warnings
import torch
order, OLD = sys.argv[1], sys.argv[2]
if order == "dtensor-first":
    import torch.distributed.tensor
import npudist.dtensor.ops as ops
loaded = "torch.distributed.tensor" in sys.modules
from torch.distributed.tensor import DTensor
funcs = DTensor._op_dispatcher.sharding_propagator.op_strategy_funcs
missing = [n for n in ops.ALL_OPS if getattr(torch.ops.npu, n).default not in funcs]
import torch.distributed.tensor as T
print("RESULT", loaded, missing, type(T.__loader__).__name__, len(ops.STRATEGIES))
if order == "dtensor-first":
    exec(OLD)
"""


@pytest.mark.parametrize("order", ["ops-first", "dtensor-first"])
def test_defining_ops_is_cheap_and_strategies_reach_dtensor(order):
    """In a fresh interpreter each; the dtensor-first one also checks the removed alias paths stay gone."""
    r = subprocess.run([sys.executable, "-c", CHECK, order, OLD], capture_output=True, text=True, timeout=180,
                       env=clean_env(), cwd=REPO)
    assert r.returncode == 0, r.stderr
    lines = [x for x in r.stdout.splitlines() if x.startswith("RESULT")]
    loaded = "True" if order == "dtensor-first" else "False"
    assert lines[0] == f"RESULT {loaded} [] SourceFileLoader 8", lines[0] + r.stderr
    if order == "dtensor-first":
        # the old alias modules are removed; their real modules import
        assert lines[1] == "RESULT ['_launch', 'coverage', 'fused_ops', 'strategies', 'sweep'] True True True", lines[1]
