"""Models shared by the tests and the benchmarks (tests/graph, benchmarks/_models.py).

Kept to what both need; the tests build them tiny (every compile costs seconds on 2 cores),
the benchmarks at working sizes.
"""
import torch.nn as nn
import torch.nn.functional as F


class DecoderBlock(nn.Module):
    """GPT-style pre-LayerNorm decoder block: causal self-attention (``scaled_dot_product_attention``)
    and a 4x GELU MLP, each with a residual connection.

    ``d`` (model width) must be divisible by ``heads``. ``forward(x)``: x of shape
    (batch, seq, d), floating point, on any device; returns the same shape and dtype.
    """

    def __init__(self, d=16, heads=2):
        super().__init__()
        if d % heads:
            raise ValueError(f"DecoderBlock: d={d} is not divisible by heads={heads}; pick d a multiple of heads")
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.fc, self.out = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=2)
        q, k, v = (z.view(b, t, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(y.transpose(1, 2).reshape(b, t, d))
        return x + self.out(F.gelu(self.fc(self.ln2(x))))
