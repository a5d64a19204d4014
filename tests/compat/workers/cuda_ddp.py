"""A DDP training script written for CUDA; the only change is the two torch_npu imports at the top."""
# The imports stand as a user's script has them (torch_npu's lines first): their order is the point.
# isort: skip_file
import torch_npu  # noqa: F401  (the one line a CUDA script adds for npu)
from torch_npu.contrib import transfer_to_npu  # noqa: F401  (importing it redirects cuda calls to npu)

import os

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

from _report import report


def main():
    local_rank = int(os.environ["LOCAL_RANK"])
    assert torch.cuda.is_available() and dist.is_nccl_available()
    torch.cuda.set_device(local_rank)
    dist.init_process_group(backend="nccl")
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4)).cuda()
    ddp = DDP(model, device_ids=[local_rank], output_device=local_rank)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
    scaler = torch.cuda.amp.GradScaler()
    torch.manual_seed(100 + rank)  # different data on each rank
    losses = []
    for _ in range(3):
        x = torch.randn(8, 16, device=torch.device("cuda", local_rank))
        y = torch.randint(0, 4, (8,), device="cuda")
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = F.cross_entropy(ddp(x).float(), y)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        opt.zero_grad()
        losses.append(loss.item())
    torch.cuda.synchronize()
    flat = torch.cat([p.detach().reshape(-1) for p in model.parameters()])
    gathered = [torch.empty_like(flat) for _ in range(dist.get_world_size())]
    dist.all_gather(gathered, flat)
    report(backend=dist.get_backend(), param_device=str(flat.device), is_cuda=flat.is_cuda,
           params_equal_across_ranks=all(torch.equal(gathered[0], g) for g in gathered),
           params_changed=bool(losses[0] != losses[-1]), memory_allocated=torch.cuda.memory_allocated(),
           current=torch.cuda.current_device(), losses=losses)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
