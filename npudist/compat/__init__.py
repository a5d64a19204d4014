"""Compatibility with scripts written for torch_npu or CUDA (docs/torch_npu_compat.md).

- ``import torch_npu`` where no real torch_npu is installed: npudist_torch_npu_finder
  serves the package in npudist/compat/torch_npu_pkg (a real install always wins).
- npudist.compat.ops: more torch_npu ops under torch.ops.npu.
- npudist.compat.transfer: the ``torch_npu.contrib.transfer_to_npu`` layer for CUDA scripts.
- npudist.compat.names: torch_npu's public names and the "not available" error.
"""
