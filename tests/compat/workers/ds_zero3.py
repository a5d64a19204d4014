"""DeepSpeed ZeRO-3 in bf16 with DeepSpeed's default optimizer for NPU (config "Adam": FusedAdam),
written as a user writes it for an Ascend machine: no npudist-specific code, no environment
variable set by hand (npurun runs it). Also FusedLion on its own. Reports through RESULT lines."""
import json
import os

import deepspeed
import torch
from deepspeed.accelerator import get_accelerator

deepspeed.init_distributed()
rank = int(os.environ["RANK"])
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.GELU(), torch.nn.Linear(64, 4))
config = {"train_micro_batch_size_per_gpu": 8, "gradient_accumulation_steps": 1,
          "optimizer": {"type": "Adam", "params": {"lr": 1e-2}},
          "bf16": {"enabled": True}, "zero_optimization": {"stage": 3}}
engine, opt, _, _ = deepspeed.initialize(model=model, model_parameters=model.parameters(), config=config)
g = torch.Generator().manual_seed(rank)
x = torch.randn(8, 32, generator=g).to(engine.device, torch.bfloat16)
y = torch.randn(8, 4, generator=g).to(engine.device, torch.bfloat16)
losses = []
for _ in range(12):
    loss = torch.nn.functional.mse_loss(engine(x), y)
    engine.backward(loss)
    engine.step()
    losses.append(float(loss.detach()))
with deepspeed.zero.GatheredParameters(list(engine.module.parameters())):
    full = torch.cat([p.detach().float().cpu().flatten() for p in engine.module.parameters()])
    checksum = [float(full.sum()), float(full.abs().sum()), int(full.numel())]

# FusedLion, as DeepSpeed's NPU op builder provides it
from deepspeed.ops.lion import FusedLion  # noqa: E402  (after init_distributed: the builder picks the accelerator)

w = torch.nn.Parameter(torch.ones(16, device=engine.device))
w.grad = torch.full((16,), 0.5, device=engine.device)
lion = FusedLion([w], lr=0.1, weight_decay=0.0)
lion.step()
print("RESULT " + json.dumps({
    "accelerator": get_accelerator().device_name(), "optimizer": type(opt).__name__,
    "inner": type(getattr(opt, "optimizer", opt)).__name__, "device": str(engine.device), "losses": losses,
    "checksum": checksum, "lion": w.detach().cpu().tolist(), "ascend_home": os.environ.get("ASCEND_HOME_PATH"),
    "cann": torch.version.cann}), flush=True)
