"""npudist.fsdp: where FSDP2, DDP and DCP support on npu lives.

FSDP2 (``torch.distributed.fsdp.fully_shard``), DDP and ``torch.distributed.checkpoint`` run on
npu through PyTorch's own code with no patching: the device module (``torch.npu``), the
``hccl`` backend and the allocator provide what they read. This package holds what PyTorch
2.13 needs spelled differently on a PrivateUse1 device (see docs/training.md):

- ``checkpoint_process_group()`` (``checkpoint.py``): a dedicated group for DCP's
  ``async_save``;
- ``npu_bf16_compress_hook`` (``ddp_hooks.py``): DDP's bf16 gradient compression hook;
- ``checkpoint_writer`` (``checkpoint_writer.py``): DCP's FileSystemWriter with the
  ``kind=kill,ckpt_write=N`` fault hook (docs/fault_injection.md);
- ``checkpoint_problem`` (``checkpoint_check.py``): why a DCP checkpoint directory is torn or
  damaged (None if it loads whole);
- ``check_world_size``, ``elastic_range`` (``elastic.py``): whether a checkpoint may be
  resumed on another number of ranks (an elastic range's resharding request) or is an error.
"""
from npudist.fsdp.checkpoint import checkpoint_process_group
from npudist.fsdp.checkpoint_check import checkpoint_problem
from npudist.fsdp.checkpoint_writer import checkpoint_writer
from npudist.fsdp.ddp_hooks import npu_bf16_compress_hook
from npudist.fsdp.elastic import check_world_size, elastic_range

__all__ = ["check_world_size", "checkpoint_problem", "checkpoint_process_group", "checkpoint_writer", "elastic_range",
           "npu_bf16_compress_hook"]
