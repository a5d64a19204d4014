"""init_process_group(device_id=...) then init_device_mesh, with no set_device (CUDA's rules, docs/architecture.md "Registration order").

On CUDA: binding the group to a device is C++ only, so torch.cuda.is_initialized()
stays False and the current device stays 0; torch.manual_seed and the
torch.accelerator queries do not initialise either; init_device_mesh then sets
the current device from LOCAL_RANK.
"""
import os

import torch
import torch.distributed as dist
from _report import report
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.tensor import Shard, distribute_tensor

local_rank = int(os.environ["LOCAL_RANK"])
acc = torch.accelerator.current_accelerator()
assert torch.accelerator.is_available() and torch.accelerator.device_count() >= 2
torch.accelerator.device_index(local_rank)  # not entered: does nothing, as on CUDA
device = torch.device(acc.type, local_rank)
dist.init_process_group(backend=dist.get_default_backend_for_device(device), device_id=device)
torch.manual_seed(0)
after_pg = torch.npu.is_initialized()

from npudist import _C  # noqa: E402  (reads the C++ current device without lazy init)

cpp_current = _C._current_device()
mesh = init_device_mesh(acc.type, (dist.get_world_size(),))
current = torch.npu.current_device()
x = torch.full((4,), float(dist.get_rank() + 1), device=acc.type)
dist.all_reduce(x, group=mesh.get_group())
dt = distribute_tensor(torch.arange(8.0), mesh, [Shard(0)])
report(backend=dist.get_backend(), after_pg=after_pg, cpp_current_after_pg=cpp_current,
       after_mesh=torch.npu.is_initialized(), current_after_mesh=current, x_device=str(x.device),
       all_reduce=x.tolist(), dtensor_device=str(dt.to_local().device), dtensor_local=dt.to_local().tolist(),
       bound=str(dist.distributed_c10d._get_default_group().bound_device_id))
dist.destroy_process_group()
