"""``torch_npu.utils``: its public names (tensor combining, thread affinity, CANN version, ...) are
Ascend-specific and not provided here; each raises an error naming it."""
from npudist.compat.names import missing as _missing


def __getattr__(name):
    raise _missing("torch_npu.utils", name)
