"""A plain npurun training script of a LLaMA-style decoder (RMSNorm, SDPA attention, SwiGLU MLP) under FSDP2, with
optional tensor parallelism (DTensor: ColwiseParallel / RowwiseParallel on a 2-D mesh ("dp", "tp")) and optional
pipeline parallelism (``--pp``: torch.distributed.pipelining stages on a 3-D mesh ("pp", "dp", "tp"), no static
stage metadata, ``--schedule gpipe|1f1b|interleaved``).

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
p.add_argument("--pp", type=int, default=1, help="pipeline stages (torch.distributed.pipelining, DYNAMIC metadata)")
p.add_argument("--schedule", choices=("gpipe", "1f1b", "interleaved"), default="1f1b",
               help="with --pp: the schedule (interleaved: two stages per rank)")
p.add_argument("--microbatches", type=int, default=None, help="with --pp: micro-batches per step (default --batch)")
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


class Stage(nn.Module):
    """Layers ``lo:hi`` of the decoder, with the embedding on the first stage and the head on the last."""

    def __init__(self, lo, hi, first, last):
        super().__init__()
        self.tok = nn.Embedding(args.vocab, args.dim) if first else None
        self.layers = nn.ModuleList(Block() for _ in range(lo, hi))
        self.norm = nn.RMSNorm(args.dim) if last else None
        self.out = nn.Linear(args.dim, args.vocab, bias=False) if last else None

    def forward(self, x):
        if self.tok is not None:
            x = self.tok(x)
        for layer in self.layers:
            x = layer(x)
        return self.out(self.norm(x)) if self.out is not None else x


def shard(model, mesh):
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
    return model


def train_pipeline():
    from torch.distributed.pipelining import PipelineStage, Schedule1F1B, ScheduleGPipe, ScheduleInterleaved1F1B

    world = dist.get_world_size()
    mesh = init_device_mesh("npu", (args.pp, world // args.pp // args.tp, args.tp), mesh_dim_names=("pp", "dp", "tp"))
    pp_rank = mesh["pp"].get_local_rank()
    per_rank = 2 if args.schedule == "interleaved" else 1
    n = args.pp * per_rank
    stages, params = [], []
    for v in range(per_rank):
        index = pp_rank + v * args.pp
        lo, hi = index * args.layers // n, (index + 1) * args.layers // n
        with torch.device("meta"):
            mod = Stage(lo, hi, index == 0, index == n - 1)
        mod = shard(mod, mesh)
        params += list(mod.parameters())
        stages.append(PipelineStage(mod, index, n, torch.device("npu", local), group=mesh["pp"].get_group()))

    def loss_fn(logits, target):
        return F.cross_entropy(logits.float().reshape(-1, args.vocab), target.reshape(-1))

    micro = args.microbatches or args.batch
    if args.schedule == "interleaved":
        sched = ScheduleInterleaved1F1B(stages, n_microbatches=micro, loss_fn=loss_fn)
    else:
        sched = (ScheduleGPipe if args.schedule == "gpipe" else Schedule1F1B)(stages[0], n_microbatches=micro,
                                                                              loss_fn=loss_fn)
    opt = torch.optim.AdamW(params, lr=1e-4)
    first, last = pp_rank == 0, pp_rank == args.pp - 1 or args.schedule == "interleaved"
    for _ in range(args.steps):
        idx = torch.randint(0, args.vocab, (args.batch, args.seq + 1), device="npu")
        kw = {"target": idx[:, 1:], "losses": []} if last else {}
        sched.step(idx[:, :-1], **kw) if first else sched.step(**kw)
        opt.step()
        opt.zero_grad(set_to_none=True)
        profiler_step(tokens=args.batch * args.seq)


local = int(os.environ["LOCAL_RANK"])
torch.npu.set_device(local)
dist.init_process_group("hccl")
if args.pp > 1:
    train_pipeline()
    dist.destroy_process_group()
    raise SystemExit(0)
world = dist.get_world_size()
mesh = init_device_mesh("npu", (world // args.tp, args.tp), mesh_dim_names=("dp", "tp"))
with torch.device("meta"):
    model = Decoder()
model = shard(model, mesh)
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
