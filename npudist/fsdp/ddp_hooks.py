"""DDP communication hooks for npu.

``torch.distributed.algorithms.ddp_comm_hooks.default_hooks.bf16_compress_hook`` is refused by
DDP itself on anything but CUDA + NCCL >= 2.10 or XPU + XCCL (``DistributedDataParallel.
_check_comm_hook`` tests the hook's name and the CUDA/NCCL versions: "BF16 all reduce
communication hook required CUDA 11+ and NCCL 2.10+ or XPU and XCCL"). hccl reduces bfloat16
natively (accumulating in float32), so npu gets the same compression with this hook.
"""
import torch
import torch.distributed as dist


def npu_bf16_compress_hook(process_group, bucket):
    """DDP comm hook: all-reduces the bucket's gradients as bfloat16 (half the bytes), averaged
    over the group (ReduceOp.AVG), and writes the result back into the bucket in its own dtype.

    Use as ``ddp_model.register_comm_hook(None, npu_bf16_compress_hook)`` (``None``: the
    default group, or pass a group). Gradients lose precision to bfloat16 (8 bits of mantissa)
    once per step. Returns a Future of the bucket's buffer, as DDP requires."""
    group = process_group if process_group is not None else dist.group.WORLD
    buf = bucket.buffer()
    compressed = buf.to(torch.bfloat16)
    fut = dist.all_reduce(compressed, op=dist.ReduceOp.AVG, group=group, async_op=True).get_future()

    def decompress(f):
        buf.copy_(f.value()[0])
        return buf

    return fut.then(decompress)
