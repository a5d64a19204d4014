"""A dedicated process group for ``torch.distributed.checkpoint.async_save``.

DCP's async_save runs its collectives (object all-gathers, barriers) on a background thread,
so it needs a group of its own, and that group must handle cpu tensors (async_save asserts a
CPU backend). PyTorch recommends ``dist.new_group(backend="gloo")``. In torch 2.13 that fails
when the default group was created with ``init_process_group(device_id=torch.device("npu", i))``:
new_group inherits the bound device and then asks the new group for its npu backend
("RuntimeError: No backend type associated with device type npu"). A device-mapped spec that
also names npu works: cpu tensors (DCP's object collectives) go to Gloo, npu tensors to hccl.
"""
import datetime

import torch.distributed as dist


def checkpoint_process_group(timeout: datetime.timedelta | None = None):
    """A new group of all ranks for async checkpointing: Gloo for cpu tensors, hccl for npu.

    Pass it as ``process_group=`` to ``torch.distributed.checkpoint.async_save`` (and, for the
    same reason, to ``dcp.save``/``dcp.load`` called while an async save may still be running).
    Every rank must call it, in the same order as its other ``new_group`` calls (it is a
    collective, as ``dist.new_group``).

    timeout: the group's timeout (default: PyTorch's default for Gloo, 30 min).
    Raises RuntimeError if the default process group is not initialised.
    """
    if not dist.is_initialized():
        raise RuntimeError("checkpoint_process_group() needs torch.distributed to be initialised: call "
                           "dist.init_process_group('hccl', device_id=...) first")
    bound = dist.group.WORLD.bound_device_id
    if bound is not None and bound.type != "cpu":
        # Naming the bound device's backend too keeps new_group's eager connect working.
        spec = f"cpu:gloo,{bound.type}:{dist.get_default_backend_for_device(bound)}"
    else:
        spec = "gloo"
    return dist.new_group(backend=spec, timeout=timeout)
