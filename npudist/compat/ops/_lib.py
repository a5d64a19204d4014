"""Defining npudist.compat.ops's ops in npudist's one ``npu`` op library (npudist._op_library,
shared with npudist.dtensor.ops), and their error for unsupported arguments."""
from npudist._op_library import LIB as lib


def define(schema: str, fn) -> None:
    """Defines ``npu::<schema>`` and registers ``fn`` as its CompositeImplicitAutograd kernel."""
    name = schema.split("(")[0]  # "op" or "op.overload"
    lib.define(schema)
    lib.impl(name, fn, "CompositeImplicitAutograd")


def unsupported(op: str, arg: str, why: str = "") -> NotImplementedError:
    return NotImplementedError(
        f"torch_npu.{op}: argument {arg} is not supported by npudist's implementation"
        + (f" ({why})" if why else "") + "; see docs/torch_npu_compat.md")
