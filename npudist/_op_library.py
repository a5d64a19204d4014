"""The one ``torch.library.Library("npu", "FRAGMENT")`` npudist defines its ``torch.ops.npu`` ops in.

npudist.dtensor.ops (the fused ops with DTensor strategies) and npudist.compat.ops (more torch_npu
ops) both register through :data:`LIB`, so the ``npu`` namespace has one owner object in npudist.
FRAGMENT, not DEF: another library (a real torch_npu build, a C++ extension) may define ops in the
``npu`` namespace too. Imports torch only.
"""
import torch

LIB = torch.library.Library("npu", "FRAGMENT")
