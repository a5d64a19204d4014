"""pytest plugin: runs CuPy's own tests (tests/cupy_tests) against npudist.xp or NumPy.

Loaded by benchmarks/cupy_conformance.py with ``-p xp_cupy_plugin``; the target comes from
``XP_CUPY_TARGET`` (``xp`` or ``numpy``). At configure time every public name of the installed
``cupy`` module (cupy-cuda12x 14.2.0, which imports without a GPU) is made to resolve to the
target's: ``cupy.X`` -> ``target.X``, ``cupy.ndarray`` -> ``target.ndarray``, ``cupy.asnumpy`` ->
``xp.asnumpy`` (NumPy: ``numpy.asarray``). Names the target lacks are removed, so a test using
them fails with AttributeError instead of reaching CUDA. ``cupy.testing`` and ``cupy.cuda`` (and
every private name) are left untouched: the comparison decorators keep calling the test once with
``xp=cupy`` (now the target) and once with ``xp=numpy``.

Each test's outcome is appended to ``XP_CUPY_REPORT`` (one JSON line per test id). Nothing here
changes PyTorch, NumPy or npudist; only the attributes of the ``cupy`` module object in this
pytest process are rebound.
"""
import json
import os

_KEEP = {"testing", "cuda"}
_report = None


def _target():
    name = os.environ.get("XP_CUPY_TARGET", "xp")
    if name == "numpy":
        import numpy
        return numpy, {"asnumpy": numpy.asarray}
    if name == "xp":
        import npudist.xp as xp
        return xp, {"asnumpy": xp.asnumpy}
    raise ValueError(f"XP_CUPY_TARGET={name!r}: use 'xp' or 'numpy'")


def alias_cupy():
    """Rebinds cupy's public names to the target's; returns (aliased, removed) name counts."""
    import cupy
    target, extra = _target()
    aliased = removed = 0
    for name in list(vars(cupy)):
        if name.startswith("_") or name in _KEEP:
            continue
        if name in extra:
            setattr(cupy, name, extra[name])
            aliased += 1
        elif hasattr(target, name):
            setattr(cupy, name, getattr(target, name))
            aliased += 1
        else:
            delattr(cupy, name)
            removed += 1
    return aliased, removed


def pytest_configure(config):
    global _report
    alias_cupy()
    path = os.environ.get("XP_CUPY_REPORT")
    if path:
        _report = open(path, "a")


def pytest_runtest_logreport(report):
    if _report is None:
        return
    # one line per test: failed in any phase -> failed; passed only if the call passed
    if report.when == "call" or report.outcome != "passed":
        _report.write(json.dumps({"id": report.nodeid, "when": report.when, "outcome": report.outcome}) + "\n")
        _report.flush()


def pytest_unconfigure(config):
    if _report is not None:
        _report.close()
