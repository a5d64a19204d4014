"""The ``npu`` op namespace fragment npudist.compat.ops defines its ops in (torch.library)."""
import torch

# FRAGMENT: npudist.dtensor (and a real torch_npu or another extension) may define other npu ops.
lib = torch.library.Library("npu", "FRAGMENT")


def define(schema: str, fn) -> None:
    """Defines ``npu::<schema>`` and registers ``fn`` as its CompositeImplicitAutograd kernel."""
    name = schema.split("(")[0]  # "op" or "op.overload"
    lib.define(schema)
    lib.impl(name, fn, "CompositeImplicitAutograd")


def unsupported(op: str, arg: str, why: str = "") -> NotImplementedError:
    return NotImplementedError(
        f"torch_npu.{op}: argument {arg} is not supported by npudist's implementation"
        + (f" ({why})" if why else "") + "; see docs/torch_npu_compat.md")
