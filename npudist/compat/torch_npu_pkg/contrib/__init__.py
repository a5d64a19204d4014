"""``torch_npu.contrib``: ``transfer_to_npu`` (import it to run CUDA scripts on npu). torch_npu's other
contrib modules (Ascend-tuned layers) are not provided and raise a clear error naming them."""
from npudist.compat.names import missing as _missing


def __getattr__(name):
    if name == "transfer_to_npu":
        import importlib

        return importlib.import_module(f"{__name__}.transfer_to_npu")
    raise _missing("torch_npu.contrib", name)
