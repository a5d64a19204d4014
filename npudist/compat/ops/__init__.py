"""More torch_npu ops under ``torch.ops.npu`` (beyond npudist.dtensor's fused four), chosen by use.

Each op has torch_npu's name and schema and a real kernel composed of torch ops,
registered as CompositeImplicitAutograd: it runs on npu (and cpu), autograd
comes from its parts, and torch.compile traces through it. No DTensor sharding
strategies are registered for these (DTensor decomposes or rejects them; see
docs/torch_npu_compat.md). Which arguments are not supported is said in each
op's docstring and raises NotImplementedError naming the argument.

The survey that picked them (call sites in public torch_npu training code) is
in docs/torch_npu_compat.md.
"""
from npudist.compat.ops import apply_adam_w, format_cast, grouped_matmul, moe_routing  # register

# torch_npu names whose Python signature torch.ops cannot give (``out=`` tuples)
PYTHON_WRAPPERS = {"npu_apply_adam_w": apply_adam_w.npu_apply_adam_w}

__all__ = ["PYTHON_WRAPPERS", "apply_adam_w", "format_cast", "grouped_matmul", "moe_routing"]
