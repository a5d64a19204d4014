"""The LLaMA-style decoder family of ``python -m npudist.plan model --family llama`` (docs/plan.md, "Model command").

Architecture (LLaMA 2/3): token embedding; ``layers`` x [RMSNorm -> attention (RoPE on q and k, grouped-query
attention with ``kv_heads`` key/value heads, head_dim = hidden / heads, causal) -> residual; RMSNorm -> SwiGLU MLP
(gate and up projections fused into one ``hidden -> 2 ffn`` GEMM, as Megatron does) -> residual]; final RMSNorm;
an output layer untied from the embedding. No biases.

The kernels are the fused ops MindSpeed-LLM runs on Ascend (torch_npu's names; npudist implements them):
``npu_rms_norm``, ``npu_rotary_mul``, ``npu_swiglu`` (each replaced by Megatron's unfused elementwise ops
when the config says so, as a script without --use-fused-rmsnorm etc. runs) and ``npu_fusion_attention`` in
layout SBH with
sparse_mode 2 (causal from the upper-left corner, torch_npu's compressed 2048 x 2048 mask), which never
materialises the seq x seq scores.

Parallelism is npudist's and PyTorch's real code: tensor parallelism with DTensor
(``torch.distributed.tensor.parallel``: q/k/v and gate/up column-parallel, o and down row-parallel, a
vocabulary-parallel embedding and output layer) and, with ``sequence_parallel``, Megatron's sequence
parallelism (the norms and residuals sharded on the sequence, all-gather before and reduce-scatter after
each parallel block). Recompute: ``full`` checkpoints each layer (torch.utils.checkpoint), ``selective``
the core attention (Megatron's selective recompute). Pipeline and data parallelism and the optimizer are
composed around captures of these modules by npudist.plan.model.

Shapes (Megatron's sequence-first layout): the embedding takes (mbs, seq) int64 tokens and returns (seq, mbs,
hidden); a layer takes and returns (seq, mbs, hidden) (the sequence dim sharded over TP with sequence
parallelism); the head takes that and (mbs, seq) labels and returns the mean cross-entropy (a scalar).
"""
from __future__ import annotations

import dataclasses

import torch
import torch.nn as nn
import torch.utils.checkpoint as ckpt

COMPRESSED_MASK = 2048  # torch_npu's compressed causal mask side for sparse_mode 2-4


@dataclasses.dataclass(frozen=True)
class LlamaConfig:
    """One LLaMA-style model. ``dtype``: "bfloat16" or "float16" (parameters and activations)."""
    hidden: int
    layers: int
    heads: int
    kv_heads: int
    ffn: int
    vocab: int
    seq: int
    dtype: str = "bfloat16"
    eps: float = 1e-5
    fused_rmsnorm: bool = True   # MindSpeed's --use-fused-rmsnorm (else torch's elementwise ops)
    fused_swiglu: bool = True    # --use-fused-swiglu
    fused_rope: bool = True      # --use-fused-rotary-pos-emb

    def __post_init__(self):
        for k in ("hidden", "layers", "heads", "kv_heads", "ffn", "vocab", "seq"):
            if getattr(self, k) <= 0:
                raise ValueError(f"--{k.replace('_', '-')} = {getattr(self, k)}: give a positive integer")
        if self.hidden % self.heads:
            raise ValueError(f"--hidden {self.hidden} is not a multiple of --heads {self.heads} (head_dim = hidden / "
                             f"heads must be whole)")
        if self.heads % self.kv_heads:
            raise ValueError(f"--heads {self.heads} is not a multiple of --kv-heads {self.kv_heads}")
        if self.head_dim % 2:
            raise ValueError(f"head_dim = {self.head_dim} must be even for RoPE")

    @property
    def head_dim(self) -> int:
        return self.hidden // self.heads

    @property
    def torch_dtype(self) -> torch.dtype:
        return {"bfloat16": torch.bfloat16, "float16": torch.float16}[self.dtype]

    def layer_params(self) -> int:
        """Parameters of one decoder layer (q, k, v, o; gate+up, down; two norm weights)."""
        kv = self.kv_heads * self.head_dim
        return self.hidden * (2 * self.hidden + 2 * kv) + 3 * self.hidden * self.ffn + 2 * self.hidden

    def parameters(self) -> int:
        """All parameters: embedding, layers, final norm, untied output layer."""
        return 2 * self.vocab * self.hidden + self.layers * self.layer_params() + self.hidden


def check_layout(cfg: LlamaConfig, tp: int, pp: int, vpp_layers: int | None) -> None:
    """ValueError naming the flag when TP/PP/VPP cannot split ``cfg`` (Megatron's rules)."""
    if tp < 1 or pp < 1:
        raise ValueError(f"--tp {tp} / --pp {pp}: give positive integers")
    for what, n in (("--heads", cfg.heads), ("--kv-heads", cfg.kv_heads), ("--ffn", cfg.ffn), ("--vocab", cfg.vocab)):
        if n % tp:
            raise ValueError(f"{what} {n} is not divisible by --tp {tp} (tensor parallelism splits it)")
    if cfg.layers % pp:
        raise ValueError(f"--layers {cfg.layers} is not divisible by --pp {pp} (every stage gets the same layers)")
    if vpp_layers is not None:
        per_stage = cfg.layers // pp
        if vpp_layers <= 0 or per_stage % vpp_layers:
            raise ValueError(f"--vpp-layers {vpp_layers} must divide the {per_stage} layers of a pipeline stage")
        if pp < 2:
            raise ValueError("--vpp-layers needs --pp >= 2 (interleaved virtual stages)")


def rope_tables(seq: int, head_dim: int, dtype, device, base: float = 10000.0):
    """cos, sin of shape (seq, 1, 1, head_dim) for npu_rotary_mul's "half" rotation of (seq, batch, heads,
    head_dim) tensors."""
    inv = 1.0 / base ** (torch.arange(0, head_dim, 2, device=device, dtype=torch.float32) / head_dim)
    ang = torch.outer(torch.arange(seq, device=device, dtype=torch.float32), inv)
    ang = torch.cat([ang, ang], dim=-1)[:, None, None, :]
    return ang.cos().to(dtype), ang.sin().to(dtype)


class RMSNorm(nn.Module):
    """RMSNorm through torch_npu's fused ``npu_rms_norm`` (MindSpeed's --use-fused-rmsnorm), or unfused as
    Megatron writes it (x in fp32, x * rsqrt(mean(x^2) + eps), back to x's dtype, times the weight)."""

    def __init__(self, hidden: int, eps: float, fused: bool = True):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden))
        self.eps = eps
        self.fused = fused

    def forward(self, x):
        if self.fused:
            return torch.ops.npu.npu_rms_norm(x, self.weight, self.eps)[0]
        xf = x.float()
        return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps)).type_as(x) * self.weight


def _gather(x):
    """A sequence-sharded DTensor all-gathered for the column-parallel GEMMs (Megatron's SP all-gather)."""
    from torch.distributed.tensor import DTensor, Replicate

    if isinstance(x, DTensor) and not all(p.is_replicate() for p in x.placements):
        return x.redistribute(placements=[Replicate()] * len(x.placements))
    return x


def _no_save_gathered(ctx, op, *args, **kwargs):
    from torch.utils.checkpoint import CheckpointPolicy

    if op in (torch.ops.aten.mm.default, torch.ops.aten.addmm.default):
        return CheckpointPolicy.MUST_SAVE
    return CheckpointPolicy.PREFER_RECOMPUTE  # the all-gather and the views of its result


def _regather_in_backward(fn, x):
    """``fn(x)`` (an all-gather then GEMMs) keeping only x's shard for the backward, which all-gathers it
    again: what Megatron's sequence parallelism saves (torch's selective activation checkpointing: the GEMMs'
    outputs saved, the all-gather and the views of its result recomputed). Plain ``fn(x)`` when x is not sharded."""
    from torch.distributed.tensor import DTensor

    if not (isinstance(x, DTensor) and not all(p.is_replicate() for p in x.placements)):
        return fn(x)
    import functools

    from torch.utils.checkpoint import create_selective_checkpoint_contexts
    return ckpt.checkpoint(fn, x, use_reentrant=False, preserve_rng_state=False,
                           context_fn=functools.partial(create_selective_checkpoint_contexts, _no_save_gathered))


def _rope(x, cos, sin, fused: bool):
    if fused:
        return torch.ops.npu.npu_rotary_mul(x, cos, sin)
    x1, x2 = x.chunk(2, dim=-1)
    return x * cos + torch.cat((-x2, x1), dim=-1) * sin


def _core_attention(q, k, v, heads, mask, scale):
    return torch.ops.npu.npu_fusion_attention(q, k, v, heads, "SBH", atten_mask=mask, scale=scale,
                                              keep_prob=1.0, sparse_mode=2)[0]


class Attention(nn.Module):
    """Causal grouped-query self-attention with RoPE. Under TP the projections' outputs are this rank's
    heads (local tensors); the head counts come from the shapes."""

    def __init__(self, cfg: LlamaConfig, selective_recompute: bool = False):
        super().__init__()
        kv = cfg.kv_heads * cfg.head_dim
        self.head_dim = cfg.head_dim
        self.q = nn.Linear(cfg.hidden, cfg.hidden, bias=False)
        self.k = nn.Linear(cfg.hidden, kv, bias=False)
        self.v = nn.Linear(cfg.hidden, kv, bias=False)
        self.o = nn.Linear(cfg.hidden, cfg.hidden, bias=False)
        self.selective = selective_recompute
        self.fused_rope = cfg.fused_rope
        self.regather = True

    def _qkv(self, x):
        x = _gather(x)
        return self.q(x), self.k(x), self.v(x)

    def forward(self, x, cos, sin, mask):
        s, b = x.shape[0], x.shape[1]
        q, k, v = _regather_in_backward(self._qkv, x) if self.regather else self._qkv(x)
        q = _rope(q.view(s, b, -1, self.head_dim), cos, sin, self.fused_rope).view(s, b, -1)
        k = _rope(k.view(s, b, -1, self.head_dim), cos, sin, self.fused_rope).view(s, b, -1)
        heads = q.shape[-1] // self.head_dim  # this rank's heads under TP
        scale = self.head_dim ** -0.5
        if self.selective:
            out = ckpt.checkpoint(_core_attention, q, k, v, heads, mask, scale, use_reentrant=False, preserve_rng_state=False)
        else:
            out = _core_attention(q, k, v, heads, mask, scale)
        return self.o(out)


class MLP(nn.Module):
    """SwiGLU: gate and up in one GEMM (hidden -> 2 ffn), npu_swiglu, down (ffn -> hidden)."""

    def __init__(self, cfg: LlamaConfig):
        super().__init__()
        self.gate_up = nn.Linear(cfg.hidden, 2 * cfg.ffn, bias=False)
        self.down = nn.Linear(cfg.ffn, cfg.hidden, bias=False)
        self.fused = cfg.fused_swiglu
        self.regather = True  # False inside a fully recomputed layer, whose backward gathers again anyway

    def forward(self, x):
        y = _regather_in_backward(lambda t: self.gate_up(_gather(t)), x) if self.regather else self.gate_up(_gather(x))
        if self.fused:
            return self.down(torch.ops.npu.npu_swiglu(y, dim=-1))
        a, b = y.chunk(2, dim=-1)
        return self.down(nn.functional.silu(a) * b)


class DecoderLayer(nn.Module):
    """One pre-norm decoder layer; ``recompute`` "none", "selective" (core attention) or "full" (the layer)."""

    def __init__(self, cfg: LlamaConfig, recompute: str = "none"):
        super().__init__()
        self.cfg = cfg
        self.input_norm = RMSNorm(cfg.hidden, cfg.eps, cfg.fused_rmsnorm)
        self.attn = Attention(cfg, selective_recompute=recompute == "selective")
        self.post_norm = RMSNorm(cfg.hidden, cfg.eps, cfg.fused_rmsnorm)
        self.mlp = MLP(cfg)
        self.full_recompute = recompute == "full"
        self.attn.regather = self.mlp.regather = not self.full_recompute

    def set_tables(self, device="npu") -> None:
        """Makes the RoPE tables and the compressed causal mask once (MindSpeed keeps them across layers)."""
        cos, sin = rope_tables(self.cfg.seq, self.cfg.head_dim, self.cfg.torch_dtype, device)
        mask = torch.ones(COMPRESSED_MASK, COMPRESSED_MASK, dtype=torch.bool, device=device).triu(1)
        self.tables = (cos, sin, mask)

    def _forward(self, x):
        if not hasattr(self, "tables"):
            self.set_tables(x.device)
        cos, sin, mask = self.tables
        h = x + self.attn(self.input_norm(x), cos, sin, mask)
        return h + self.mlp(self.post_norm(h))

    def forward(self, x):
        if self.full_recompute:
            return ckpt.checkpoint(self._forward, x, use_reentrant=False, preserve_rng_state=False)
        return self._forward(x)


class Embedding(nn.Module):
    """Token embedding (vocabulary-parallel under TP)."""

    def __init__(self, cfg: LlamaConfig):
        super().__init__()
        self.tok = nn.Embedding(cfg.vocab, cfg.hidden)

    def forward(self, idx):
        return self.tok(idx.t())  # (seq, mbs, hidden), Megatron's layout


class Head(nn.Module):
    """Final RMSNorm, the untied output layer (vocabulary-parallel under TP) and the cross-entropy loss."""

    def __init__(self, cfg: LlamaConfig):
        super().__init__()
        self.norm = RMSNorm(cfg.hidden, cfg.eps, cfg.fused_rmsnorm)
        self.out = nn.Linear(cfg.hidden, cfg.vocab, bias=False)

    def forward(self, x, labels):
        logits = self.out(self.norm(x))
        return nn.functional.cross_entropy(logits.flatten(0, 1).float(), labels.t().flatten(0, 1))


def full_model_parameters(cfg: LlamaConfig) -> int:
    """The parameter count of the whole model built on the meta device (embedding, every layer, head)."""
    with torch.device("meta"):
        n = sum(p.numel() for p in Embedding(cfg).parameters()) + sum(p.numel() for p in Head(cfg).parameters())
        n += cfg.layers * sum(p.numel() for p in DecoderLayer(cfg).parameters())
    return n


def parallelize(emb: Embedding, layer: DecoderLayer, head: Head, tp_mesh, sequence_parallel: bool) -> None:
    """Tensor (and sequence) parallelism over ``tp_mesh`` with torch.distributed.tensor.parallel, in place.

    Without sequence parallelism a layer's input and output are replicated over TP (Megatron's all-reduce
    after o and down); with it they are sharded on the sequence (dim 0): the norms run on the shard, q/k/v
    and gate/up all-gather it, o and down reduce-scatter into it.
    """
    from torch.distributed.tensor import Replicate, Shard
    from torch.distributed.tensor.parallel import (
        ColwiseParallel,
        RowwiseParallel,
        SequenceParallel,
        parallelize_module,
    )

    act = Shard(0) if sequence_parallel else Replicate()
    parallelize_module(emb, tp_mesh, {"tok": RowwiseParallel(input_layouts=Replicate(), output_layouts=act)})
    # with sequence parallelism the norms hand the attention and MLP a sequence-sharded DTensor, which
    # they all-gather themselves (_gather) so that the backward can gather it again (_regather_in_backward)
    plan = {
        "attn.q": ColwiseParallel(), "attn.k": ColwiseParallel(), "attn.v": ColwiseParallel(),
        "attn.o": RowwiseParallel(output_layouts=act),
        "mlp.gate_up": ColwiseParallel(), "mlp.down": RowwiseParallel(output_layouts=act),
    }
    if sequence_parallel:
        plan["input_norm"] = SequenceParallel(sequence_dim=0)
        plan["post_norm"] = SequenceParallel(sequence_dim=0)
    parallelize_module(layer, tp_mesh, plan)
    head_plan = {"out": ColwiseParallel(input_layouts=act, output_layouts=Shard(-1), use_local_output=False)}
    if sequence_parallel:
        head_plan["norm"] = SequenceParallel(sequence_dim=0)
    parallelize_module(head, tp_mesh, head_plan)
