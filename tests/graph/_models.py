"""Small models for the compile tests (kept tiny: every compile costs seconds on 2 cores); the
decoder block is npudist.testing.models.DecoderBlock, shared with the benchmarks."""
import torch.nn as nn
import torch.nn.functional as F


class MLP(nn.Module):
    """LayerNorm -> Linear -> GELU -> Linear, x: (batch, d)."""

    def __init__(self, d=16, hidden=32):
        super().__init__()
        self.ln = nn.LayerNorm(d)
        self.fc1, self.fc2 = nn.Linear(d, hidden), nn.Linear(hidden, d)

    def forward(self, x):
        return self.fc2(F.gelu(self.fc1(self.ln(x))))

