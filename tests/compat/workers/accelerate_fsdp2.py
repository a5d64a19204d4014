"""Accelerate on npu, MULTI_NPU with FSDP2 (FullyShardedDataParallelPlugin(fsdp_version=2)), as a
user writes it for an Ascend machine: no npudist-specific code (npurun runs it). Reports through
RESULT lines."""
import json
import os

import torch
from accelerate import Accelerator, PartialState
from accelerate.utils import FullyShardedDataParallelPlugin
from torch.distributed.tensor import DTensor

state = PartialState()  # what Accelerate detects before the FSDP plugin turns the run into FSDP
detected, backend = str(state.distributed_type), state.backend
rank = int(os.environ["RANK"])
acc = Accelerator(fsdp_plugin=FullyShardedDataParallelPlugin(fsdp_version=2))
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.GELU(), torch.nn.Linear(64, 4))
opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
model, opt = acc.prepare(model, opt)
g = torch.Generator().manual_seed(rank)
x, y = torch.randn(8, 32, generator=g).to(acc.device), torch.randn(8, 4, generator=g).to(acc.device)
losses = []
for _ in range(10):
    loss = torch.nn.functional.mse_loss(model(x), y)
    acc.backward(loss)
    opt.step()
    opt.zero_grad()
    losses.append(loss.item())
p = next(model.parameters())
print("RESULT " + json.dumps({"detected": detected, "backend": backend, "type": str(acc.distributed_type),
                              "fsdp_version": acc.state.fsdp_plugin.fsdp_version, "device": str(acc.device),
                              "dtensor": isinstance(p, DTensor), "param_device": str(p.device),
                              "losses": losses}), flush=True)
acc.end_training()
