"""A pre-norm transformer block built on the npu fused ops, and its tensor-parallel plans."""
import torch
import torch.nn as nn
from torch.distributed.tensor import DTensor, Replicate, Shard
from torch.distributed.tensor.parallel import (
    ColwiseParallel,
    PrepareModuleInput,
    RowwiseParallel,
    SequenceParallel,
    parallelize_module,
)

ops = torch.ops.npu


class RMSNorm(nn.Module):
    def __init__(self, d, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(d) + 0.1 * torch.randn(d))
        self.eps = eps

    def forward(self, x):
        return ops.npu_rms_norm(x, self.weight, self.eps)[0]


def _like(t, ref):
    """A plain tensor used with DTensor activations must be a DTensor too (replicated on their mesh)."""
    if isinstance(ref, DTensor) and not isinstance(t, DTensor):
        return DTensor.from_local(t, ref.device_mesh, [Replicate()] * ref.device_mesh.ndim, run_check=False)
    return t


class Attention(nn.Module):
    def __init__(self, d, heads, kv_heads):
        super().__init__()
        self.hd = d // heads
        self.wq = nn.Linear(d, d, bias=False)
        self.wk = nn.Linear(d, kv_heads * self.hd, bias=False)
        self.wv = nn.Linear(d, kv_heads * self.hd, bias=False)
        self.wo = nn.Linear(d, d, bias=False)

    def forward(self, x, cos, sin):
        b, s = x.shape[0], x.shape[1]
        # BSND with the head count taken from the (possibly tensor-parallel local) projection
        q, k, v = (w(x).view(b, s, -1, self.hd) for w in (self.wq, self.wk, self.wv))
        cos, sin = _like(cos, q), _like(sin, q)
        q, k = ops.npu_rotary_mul(q, cos, sin), ops.npu_rotary_mul(k, cos, sin)
        # sparse_mode 2 (causal) takes torch_npu's compressed mask (None would mean no mask at all)
        causal = _like(torch.ones(2048, 2048, dtype=torch.bool, device=q.device).triu(1), q)
        out = ops.npu_fusion_attention(q, k, v, q.shape[2], "BSND", atten_mask=causal, scale=self.hd ** -0.5,
                                       sparse_mode=2)[0]
        return self.wo(out.reshape(b, s, -1))


class MLP(nn.Module):
    def __init__(self, d, hidden):
        super().__init__()
        self.w1, self.w3 = nn.Linear(d, hidden, bias=False), nn.Linear(d, hidden, bias=False)
        self.w2 = nn.Linear(hidden, d, bias=False)

    def forward(self, x):
        # gate and up projections side by side: each TP rank holds matching column shards of both
        return self.w2(ops.npu_swiglu(torch.cat([self.w1(x), self.w3(x)], dim=-1), dim=-1))


class Block(nn.Module):
    def __init__(self, d=32, heads=4, kv_heads=2, hidden=64, seq=8):
        super().__init__()
        self.norm1, self.norm2 = RMSNorm(d), RMSNorm(d)
        self.attn, self.mlp = Attention(d, heads, kv_heads), MLP(d, hidden)
        pos = torch.arange(seq, dtype=torch.float32)[:, None] / (10000 ** (torch.arange(0, d // heads, 2) / (d // heads)))
        ang = torch.cat([pos, pos], dim=-1)[None, :, None, :]
        self.register_buffer("cos", ang.cos(), persistent=False)
        self.register_buffer("sin", ang.sin(), persistent=False)

    def forward(self, x):
        x = x + self.attn(self.norm1(x), self.cos, self.sin)
        return x + self.mlp(self.norm2(x))


class Model(nn.Module):
    def __init__(self, d=32, out=16, layers=2, **kw):
        super().__init__()
        self.layers = nn.ModuleList(Block(d, **kw) for _ in range(layers))
        self.norm = RMSNorm(d)
        self.head = nn.Linear(d, out, bias=False)

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return self.head(self.norm(x))


def tp_plan(model, sequence_parallel, dtensor_attention=False):
    """Megatron-style plan: q/k/v, w1/w3 column-wise, wo/w2 row-wise; with sequence_parallel the norms
    run on sequence shards (SequenceParallel) and activations between blocks stay Shard(1).
    dtensor_attention keeps q/k/v as DTensors (the fused ops then run through their sharding strategies)."""
    seq = Shard(1) if sequence_parallel else Replicate()
    local = not dtensor_attention
    plan = {}
    for i, _ in enumerate(model.layers):
        p = f"layers.{i}."
        plan.update({
            p + "attn": PrepareModuleInput(input_layouts=(seq, None, None), desired_input_layouts=(Replicate(), None, None)),
            p + "attn.wq": ColwiseParallel(use_local_output=local),
            p + "attn.wk": ColwiseParallel(use_local_output=local),
            p + "attn.wv": ColwiseParallel(use_local_output=local),
            p + "attn.wo": RowwiseParallel(input_layouts=Shard(2) if dtensor_attention else Shard(-1), output_layouts=seq),
            p + "mlp": PrepareModuleInput(input_layouts=(seq,), desired_input_layouts=(Replicate(),)),
            p + "mlp.w1": ColwiseParallel(), p + "mlp.w3": ColwiseParallel(),
            p + "mlp.w2": RowwiseParallel(output_layouts=seq),
        })
        if sequence_parallel:
            plan[p + "norm1"] = SequenceParallel()
            plan[p + "norm2"] = SequenceParallel()
    if sequence_parallel:
        # the residual stream between blocks: local sequence shards (use_local_output), as in torchtitan
        plan["layers.0"] = PrepareModuleInput(input_layouts=(Replicate(),), desired_input_layouts=(Shard(1),),
                                              use_local_output=True)
        plan["norm"] = SequenceParallel()
    plan["head"] = ColwiseParallel(input_layouts=seq, output_layouts=Replicate())
    return plan


def parallelize(model, mesh, sequence_parallel, dtensor_attention=False):
    return parallelize_module(model, mesh, tp_plan(model, sequence_parallel, dtensor_attention))
