"""A rank started by :func:`npudist.testing.multiproc.run_on_ranks`: imports the test's function,
sets the rank up, calls it and reports its return value.

argv: MODULE QUALNAME SOURCE_FILE ARGS_PICKLE BACKEND (empty BACKEND: no process group).
"""
import functools
import importlib
import importlib.util
import pickle
import sys


def _load(module: str, qualname: str, source: str):
    try:
        mod = importlib.import_module(module)
    except ImportError:
        # a test module pytest imported under a name the rank cannot (rootdir-relative, no package)
        if not source:
            raise
        spec = importlib.util.spec_from_file_location(module, source)
        mod = importlib.util.module_from_spec(spec)
        sys.modules[module] = mod
        spec.loader.exec_module(mod)
    return functools.reduce(getattr, qualname.split("."), mod)


def main(argv):
    module, qualname, source, payload, backend = argv
    import torch.distributed as dist

    import npudist  # noqa: F401  (registers npu and hccl before the test module's imports run)
    from npudist.testing import rank
    from npudist.testing.checks import report

    rank.prepare()
    with open(payload, "rb") as f:
        args, kwargs = pickle.load(f)
    fn = _load(module, qualname, source)
    if backend:
        rank.init(backend)
    value = fn(*args, **kwargs)
    if value is not None:  # a function that reports its own RESULT lines leaves them the last
        report(kind="return", rank=rank.rank(), value=value)
    if dist.is_initialized():
        dist.destroy_process_group()


if __name__ == "__main__":
    main(sys.argv[1:])
