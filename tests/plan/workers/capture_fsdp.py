"""Captures one FSDP2 training step of a small decoder-like stack at a logical world size (argv[1]) with
npudist.plan.capture and writes its step trace to argv[2]."""
import json
import sys

import torch
import torch.nn as nn
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import fully_shard

import npudist  # noqa: F401  (registers npu when torch's backend autoload is off)
from npudist.plan.capture import StepRecorder, init_fake_world

WORLD, OUT = int(sys.argv[1]), sys.argv[2]
D, LAYERS, BATCH, SEQ = 1024, 4, 2, 128


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.up = nn.Linear(D, 4 * D)
        self.down = nn.Linear(4 * D, D)

    def forward(self, x):
        return x + self.down(torch.relu(self.up(x)))


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(256, D)
        self.blocks = nn.ModuleList(Block() for _ in range(LAYERS))
        self.head = nn.Linear(D, 256, bias=False)

    def forward(self, idx):
        x = self.emb(idx)
        for b in self.blocks:
            x = b(x)
        return self.head(x)


init_fake_world(WORLD, rank=0)
torch.npu.set_device(0)
mesh = init_device_mesh("npu", (WORLD,))
with torch.device("meta"):
    model = Model()
for b in model.blocks:
    fully_shard(b, mesh=mesh)
fully_shard(model, mesh=mesh)
with FakeTensorMode(allow_non_fake_inputs=True):
    model.to_empty(device="npu")
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    idx = torch.randint(0, 256, (BATCH, SEQ), device="npu")
    with StepRecorder(tokens=BATCH * SEQ, baseline=model.parameters()) as rec:
        model(idx).float().logsumexp(-1).mean().backward()
        opt.step()
        opt.zero_grad()
json.dump(rec.trace(), open(OUT, "w"))
print("captured", len(rec.ops), "items")
