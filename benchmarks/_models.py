"""Models of the benchmarks: a small GPT of npudist.testing.models.DecoderBlock (the block the tests
use too), and a training step of it."""
import torch
import torch.nn as nn
import torch.nn.functional as F

from npudist.testing.models import DecoderBlock


class GPT(nn.Module):
    """Byte-level GPT of DecoderBlocks; idx: (batch, seq) int64 -> logits (batch, seq, vocab) float."""

    def __init__(self, vocab=256, d=256, heads=4, layers=4, seq=128):
        super().__init__()
        self.tok, self.pos = nn.Embedding(vocab, d), nn.Embedding(seq, d)
        self.blocks = nn.ModuleList(DecoderBlock(d, heads) for _ in range(layers))
        self.ln, self.head = nn.LayerNorm(d), nn.Linear(d, vocab, bias=False)

    def forward(self, idx):
        x = self.tok(idx) + self.pos(torch.arange(idx.shape[1], device=idx.device))
        for blk in self.blocks:
            x = blk(x)
        return self.head(self.ln(x))


def gpt_train_step(device, seed=0):
    """A closure running one GPT() training step on `device`: [8, 128] random bytes, cross
    entropy, backward, AdamW (foreach off, as the per-op benchmarks compare op by op). Returns
    step() -> loss (a 0-d tensor on `device`)."""
    torch.manual_seed(seed)
    model = GPT().to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, foreach=False)
    gen = torch.Generator().manual_seed(1)
    x = torch.randint(0, 256, (8, 128), generator=gen).to(device)
    y = torch.randint(0, 256, (8, 128), generator=gen).to(device)

    def step():
        loss = F.cross_entropy(model(x).flatten(0, 1), y.flatten())
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        return loss

    return step
