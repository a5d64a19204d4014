"""set_device by the user wins over DeviceMesh's LOCAL_RANK choice; DDP(device_ids=[i]) uses device i.

As on CUDA: a script that called set_device before init_device_mesh keeps its
device (DeviceMesh only picks one while the device module is not initialised);
DDP with device_ids=[i] moves its inputs to device i and averages gradients,
whatever the current device is.
"""
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from _report import report
from torch.distributed.device_mesh import init_device_mesh
from torch.nn.parallel import DistributedDataParallel as DDP

local_rank = int(os.environ["LOCAL_RANK"])
world = int(os.environ["WORLD_SIZE"])
chosen = (local_rank + 1) % world  # deliberately not LOCAL_RANK
torch.npu.set_device(chosen)
dist.init_process_group("hccl")
init_device_mesh("npu", (world,))
current_after_mesh = torch.npu.current_device()

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(6, 5), nn.Tanh(), nn.Linear(5, 3)).to(f"npu:{local_rank}")
ddp = DDP(model, device_ids=[local_rank])
xs = [torch.randn(4, 6, generator=torch.Generator().manual_seed(100 + r)) for r in range(world)]
out = ddp(xs[local_rank])  # a cpu input: DDP moves it to device_ids[0]
out.square().sum().backward()
grads = [p.grad.detach().cpu() for p in model.parameters()]

# the expected average, from an unsharded cpu copy fed every rank's input
ref = nn.Sequential(nn.Linear(6, 5), nn.Tanh(), nn.Linear(5, 3))
ref.load_state_dict({k: v.cpu() for k, v in model.state_dict().items()})
for x in xs:
    ref(x).square().sum().backward()
max_diff = max(float((g - p.grad / world).abs().max()) for g, p in zip(grads, ref.parameters()))
report(chosen=chosen, current_after_mesh=current_after_mesh, out_device=str(out.device),
       param_device=str(next(model.parameters()).device), grad_device=str(next(model.parameters()).grad.device),
       max_grad_diff=max_diff, current_after_ddp=torch.npu.current_device())
dist.destroy_process_group()
