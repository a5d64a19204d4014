"""A small data-parallel training loop for ``npurun --profile``: each step runs forward,
backward, an hccl all_reduce of the gradients, an all_gather and a send/recv pair, then calls
npudist.profiler.step(). Prints STEP k lines."""
import os

import torch
import torch.distributed as dist

import npudist.profiler

rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
torch.npu.set_device(int(os.environ["LOCAL_RANK"]))
dist.init_process_group("hccl")
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 8)).npu()
opt = torch.optim.SGD(model.parameters(), lr=0.01)
for step in range(int(os.environ.get("STEPS", "5"))):
    x, y = torch.randn(16, 32).npu(), torch.randn(16, 8, device="npu")
    loss = torch.nn.functional.mse_loss(model(x), y)
    loss.backward()
    for p in model.parameters():
        dist.all_reduce(p.grad)
    opt.step()
    opt.zero_grad()
    out = torch.empty(world * 4, device="npu")
    dist.all_gather_into_tensor(out, torch.full((4,), float(rank), device="npu"))
    if rank == 0:
        dist.send(torch.ones(3, device="npu"), 1)
    elif rank == 1:
        dist.recv(torch.empty(3, device="npu"), 0)
    loss.detach().cpu()
    print(f"STEP {step}", flush=True)
    npudist.profiler.step()
dist.destroy_process_group()
