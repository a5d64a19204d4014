"""A plain npurun training script of a LLaMA-style decoder (RMSNorm, SDPA attention, SwiGLU MLP) under FSDP2, with
optional tensor parallelism (DTensor: ColwiseParallel / RowwiseParallel on a 2-D mesh ("dp", "tp")).

Nothing in it knows about capture: tests/plan/test_capture_script.py runs it under
``python -m npudist.plan capture`` (and small configurations under npurun). Flags: sizes, ``--tp N``,
``--item`` (prints the loss with .item() every step), ``--nonzero`` (a data-dependent op in the loss).
"""
import argparse
import os

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard
from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module

import npudist  # noqa: F401  (registers npu when torch's backend autoload is off)
from npudist.profiler import step as profiler_step

p = argparse.ArgumentParser()
p.add_argument("--dim", type=int, default=256)
p.add_argument("--layers", type=int, default=2)
p.add_argument("--heads", type=int, default=4)
p.add_argument("--kv-heads", type=int, default=None, help="grouped-query attention: key/value heads (default --heads)")
p.add_argument("--ffn", type=int, default=688)
p.add_argument("--vocab", type=int, default=512)
p.add_argument("--seq", type=int, default=64)
p.add_argument("--batch", type=int, default=2)
p.add_argument("--steps", type=int, default=3)
p.add_argument("--tp", type=int, default=1)
p.add_argument("--item", action="store_true")
p.add_argument("--nonzero", action="store_true")
args = p.parse_args()
args.kv_heads = args.kv_heads or args.heads


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        d = args.dim
        self.heads = args.heads
        kv = d // args.heads * args.kv_heads
        self.attn_norm = nn.RMSNorm(d)
        self.wq, self.wk, self.wv = nn.Linear(d, d, bias=False), nn.Linear(d, kv, bias=False), nn.Linear(d, kv, bias=False)
        self.wo = nn.Linear(d, d, bias=False)
        self.ffn_norm = nn.RMSNorm(d)
        self.w1, self.w3 = nn.Linear(d, args.ffn, bias=False), nn.Linear(d, args.ffn, bias=False)
        self.w2 = nn.Linear(args.ffn, d, bias=False)

    def forward(self, x):
        b, t, _ = x.shape
        h = self.attn_norm(x)
        q, k, v = (w(h).view(b, t, -1, args.dim // args.heads).transpose(1, 2) for w in (self.wq, self.wk, self.wv))
        if k.shape[1] != q.shape[1]:  # grouped-query attention: each key/value head serves heads // kv_heads queries
            k, v = (z.repeat_interleave(q.shape[1] // k.shape[1], dim=1) for z in (k, v))
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.wo(a.transpose(1, 2).reshape(b, t, -1))
        h = self.ffn_norm(x)
        return x + self.w2(F.silu(self.w1(h)) * self.w3(h))


class Decoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.tok = nn.Embedding(args.vocab, args.dim)
        self.layers = nn.ModuleList(Block() for _ in range(args.layers))
        self.norm = nn.RMSNorm(args.dim)
        self.out = nn.Linear(args.dim, args.vocab, bias=False)

    def forward(self, idx):
        x = self.tok(idx)
        for layer in self.layers:
            x = layer(x)
        return self.out(self.norm(x))


local = int(os.environ["LOCAL_RANK"])
torch.npu.set_device(local)
dist.init_process_group("hccl")
world = dist.get_world_size()
mesh = init_device_mesh("npu", (world // args.tp, args.tp), mesh_dim_names=("dp", "tp"))
with torch.device("meta"):
    model = Decoder()
if args.tp > 1:
    plan = {"wq": ColwiseParallel(), "wk": ColwiseParallel(), "wv": ColwiseParallel(), "wo": RowwiseParallel(),
            "w1": ColwiseParallel(), "w3": ColwiseParallel(), "w2": RowwiseParallel()}
    for layer in model.layers:
        layer.heads = args.heads // args.tp
        parallelize_module(layer, mesh["tp"], plan)
mp = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
for layer in model.layers:
    fully_shard(layer, mesh=mesh["dp"], mp_policy=mp)
fully_shard(model, mesh=mesh["dp"], mp_policy=mp)
model.to_empty(device="npu")
with torch.no_grad():
    for prm in model.parameters():
        prm.normal_(0.0, 0.02)
opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
for step in range(args.steps):
    idx = torch.randint(0, args.vocab, (args.batch, args.seq + 1), device="npu")
    logits = model(idx[:, :-1])
    loss = F.cross_entropy(logits.float().reshape(-1, args.vocab), idx[:, 1:].reshape(-1))
    if args.nonzero:
        loss = loss + logits[logits > 0].float().sum() * 0
    loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)
    if args.item and dist.get_rank() == 0:
        print(f"step {step} loss {loss.item():.4f}", flush=True)
    profiler_step(tokens=args.batch * args.seq)
dist.destroy_process_group()
