"""Migration checker: scans NumPy / CuPy code and reports what npudist.xp does not support.

    python -m npudist.xp.check_migration [--json] PATH [PATH ...]

For each .py file (directories are walked) it finds the names numpy / cupy are imported as
(``import numpy as np``, ``from numpy import fft``, ``import cupy as cp``...), every attribute
used through them (``np.linalg.lstsq``, ``cp.RawKernel``), and the dtypes named (``np.longdouble``,
``dtype="U8"``, ``.astype("M8")``), and reports

* APIs with no xp counterpart (e.g. ``np.ma``, ``np.char``, ``cp.RawKernel``),
* dtypes xp rejects (strings, objects, datetimes, long double),
* APIs xp supports only in part (documented limits, e.g. quantile weights, pad modes).

Exit status: 0 when nothing is reported, 1 when something is, 2 on a usage error.
"""
import argparse
import ast
import json
import os
import sys

import numpy as np

MODULES = {"numpy": "numpy", "cupy": "cupy", "cupyx": "cupyx"}
UNSUPPORTED_DTYPE_NAMES = {"longdouble", "clongdouble", "float128", "complex256", "str_", "bytes_", "object_",
                           "datetime64", "timedelta64", "void"}
PARTIAL = {
    "quantile": "weights= and methods other than linear/lower/higher/midpoint/nearest are not supported",
    "percentile": "weights= and methods other than linear/lower/higher/midpoint/nearest are not supported",
    "pad": "modes constant, edge, reflect, symmetric, wrap only",
    "histogram": "bins given as a string estimator ('auto', 'fd', ...) is not supported",
    "sort": "complex sorts lexicographically as NumPy; kind= is ignored (always stable)",
    "partition": "returns a fully sorted axis (satisfies partition's contract)",
    "cov": "fweights= / aweights= are not supported",
    "interp": "period= is not supported",
    "max": "complex arrays are not supported", "min": "complex arrays are not supported",
    "amax": "complex arrays are not supported", "amin": "complex arrays are not supported",
    "argmax": "complex arrays are not supported", "argmin": "complex arrays are not supported",
    "flip": "returns a copy, not a view", "fliplr": "returns a copy, not a view",
    "flipud": "returns a copy, not a view",
    "random": "same API, different bit streams than NumPy for a seed",
    "vectorize": "NumPy's Python loop on the host, one call per element (CuPy compiles a kernel)",
}
# (ElementwiseKernel, ReductionKernel, fuse, the memory pools and Device exist in xp)
CUPY_ONLY = {"RawKernel", "RawModule", "cuda", "RawArray", "memoize"}
CUPY_ALIASES = {"asnumpy", "get_array_module"}


def _xp():
    import npudist.xp as xp
    return xp


def _resolve(chain):
    """True if npudist.xp has the attribute chain (['linalg', 'inv'])."""
    obj = _xp()
    for part in chain:
        if not hasattr(obj, part):
            return False
        obj = getattr(obj, part)
    return True


def _dtype_problem(value):
    try:
        dt = np.dtype(value)
    except TypeError:
        return None
    from npudist.xp._dtypes import NP_TO_TORCH
    if dt.newbyteorder("=") in NP_TO_TORCH:
        return None
    return dt.name


class _Visitor(ast.NodeVisitor):
    def __init__(self, path):
        self.path = path
        self.aliases = {}  # local name -> (module, attribute chain prefix)
        self.findings = []

    def report(self, node, kind, api, message):
        self.findings.append({"file": self.path, "line": node.lineno, "col": node.col_offset + 1, "kind": kind,
                              "api": api, "message": message})

    def visit_Import(self, node):
        for a in node.names:
            root = a.name.split(".")[0]
            if root in MODULES:
                self.aliases[a.asname or root] = (root, a.name.split(".")[1:] if a.asname else [])
        self.generic_visit(node)

    def visit_ImportFrom(self, node):
        if node.module and node.module.split(".")[0] in MODULES:
            parts = node.module.split(".")
            for a in node.names:
                chain = parts[1:] + [a.name]
                if a.name == "*":
                    continue
                self.aliases[a.asname or a.name] = (parts[0], chain)
                self._check(node, parts[0], chain)
        self.generic_visit(node)

    def _chain(self, node):
        parts = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if isinstance(node, ast.Name) and node.id in self.aliases:
            mod, prefix = self.aliases[node.id]
            return mod, prefix + parts[::-1]
        return None

    def visit_Attribute(self, node):
        found = self._chain(node)
        if found:
            self._check(node, *found)
            return  # do not report the prefixes of the same chain again
        self.generic_visit(node)

    def visit_Name(self, node):
        if node.id in self.aliases:
            mod, chain = self.aliases[node.id]
            if chain:
                self._check(node, mod, chain, from_import=True)

    def _check(self, node, mod, chain, from_import=False):
        if not chain:
            return
        api = f"{mod}.{'.'.join(chain)}"
        if mod == "cupyx" or (mod == "cupy" and chain[0] in CUPY_ONLY):
            self.report(node, "unsupported-api", api, "CUDA-specific CuPy API: no npudist.xp counterpart "
                        "(write the kernel with xp array operations or torch)")
            return
        if chain[-1] in UNSUPPORTED_DTYPE_NAMES or (len(chain) == 1 and _dtype_problem(chain[0]) and
                                                   hasattr(np, chain[0]) and isinstance(getattr(np, chain[0]), type)):
            self.report(node, "unsupported-dtype", api, f"dtype {chain[-1]} is rejected by npudist.xp "
                        f"(PyTorch has no npu kernels for it); use a signed integer / supported dtype")
            return
        if not _resolve(chain):
            self.report(node, "unsupported-api", api, f"npudist.xp has no {'.'.join(chain)}")
            return
        if chain[-1] in PARTIAL and not from_import:
            self.report(node, "partial", api, PARTIAL[chain[-1]])

    def visit_keyword(self, node):
        if node.arg == "dtype" and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            bad = _dtype_problem(node.value.value)
            if bad:
                self.report(node.value, "unsupported-dtype", repr(node.value.value),
                            f"dtype {bad} is rejected by npudist.xp")
        self.generic_visit(node)

    def visit_Call(self, node):
        if isinstance(node.func, ast.Attribute) and node.func.attr in ("astype", "view") and node.args:
            arg = node.args[0]
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                bad = _dtype_problem(arg.value)
                if bad:
                    self.report(arg, "unsupported-dtype", repr(arg.value), f"dtype {bad} is rejected by npudist.xp")
        self.generic_visit(node)


def check_source(source, path="<string>"):
    """Findings (list of dicts: file, line, col, kind, api, message) for one source text."""
    try:
        tree = ast.parse(source, filename=path)
    except SyntaxError as e:
        return [{"file": path, "line": e.lineno or 0, "col": e.offset or 0, "kind": "syntax-error", "api": "",
                 "message": f"cannot parse: {e.msg}"}]
    v = _Visitor(path)
    v.visit(tree)
    return sorted(v.findings, key=lambda f: (f["line"], f["col"]))


def _files(paths):
    for p in paths:
        if os.path.isdir(p):
            for root, dirs, files in os.walk(p):
                dirs[:] = [d for d in dirs if not d.startswith(".") and d not in ("__pycache__", "node_modules")]
                for f in sorted(files):
                    if f.endswith(".py"):
                        yield os.path.join(root, f)
        elif os.path.isfile(p):
            yield p
        else:
            raise FileNotFoundError(f"no such file or directory: {p}")


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m npudist.xp.check_migration",
                                description="Report NumPy/CuPy APIs and dtypes npudist.xp does not support.")
    p.add_argument("paths", nargs="+", help=".py files or directories")
    p.add_argument("--json", action="store_true", help="print findings as JSON")
    args = p.parse_args(argv)
    findings = []
    try:
        for f in _files(args.paths):
            with open(f, encoding="utf-8", errors="replace") as fh:
                findings += check_source(fh.read(), f)
    except FileNotFoundError as e:
        print(f"check_migration: {e}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(findings, indent=1))
    else:
        for f in findings:
            print(f"{f['file']}:{f['line']}:{f['col']}: {f['kind']}: {f['api']}: {f['message']}")
        kinds = {}
        for f in findings:
            kinds[f["kind"]] = kinds.get(f["kind"], 0) + 1
        summary = ", ".join(f"{n} {k}" for k, n in sorted(kinds.items())) or "nothing to report"
        print(f"check_migration: {summary}")
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
