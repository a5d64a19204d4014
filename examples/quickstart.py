"""Quickstart: real work on a simulated npu with ordinary PyTorch.

Trains a small character-level MLP language model on the Python standard
library's own source text, on ``npu:0``, and checks every few steps that the
same step on CPU gives the same loss. Runs in well under a minute.

    python examples/quickstart.py [--steps 200] [--device npu:0]

This is the device core's example; the flagship FSDP2 GPT job replaces it as
the README's first command once it lands (examples/train_gpt.py).
"""
import argparse
import os
import sysconfig
import time

import torch
import torch.nn as nn


def stdlib_bytes(limit=2_000_000):
    """Bytes of the standard library's .py files, in a fixed order."""
    root = sysconfig.get_paths()["stdlib"]
    out = bytearray()
    for name in sorted(os.listdir(root)):
        if name.endswith(".py"):
            with open(os.path.join(root, name), "rb") as f:
                out += f.read()
        if len(out) >= limit:
            break
    return torch.frombuffer(out[:limit], dtype=torch.uint8).long()


class CharMLP(nn.Module):
    def __init__(self, context=16, dim=64, hidden=256):
        super().__init__()
        self.embed = nn.Embedding(256, dim)
        self.net = nn.Sequential(nn.Flatten(), nn.Linear(context * dim, hidden), nn.GELU(), nn.LayerNorm(hidden),
                                 nn.Linear(hidden, 256))

    def forward(self, x):
        return self.net(self.embed(x))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--device", default="npu:0")
    ap.add_argument("--batch", type=int, default=256)
    args = ap.parse_args()
    torch.manual_seed(0)
    torch.set_num_threads(1)

    device = torch.device(args.device)
    print(f"torch {torch.__version__}; accelerator: {torch.accelerator.current_accelerator()}; "
          f"{torch.npu.device_count()} npus; using {device} ({torch.npu.get_device_name(device)})")
    data = stdlib_bytes()
    context = 16
    split = int(0.9 * len(data))
    train, val = data[:split].to(device), data[split:].to(device)

    model = CharMLP(context).to(device)
    reference = CharMLP(context)
    reference.load_state_dict({k: v.cpu() for k, v in model.state_dict().items()})
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    ref_opt = torch.optim.AdamW(reference.parameters(), lr=3e-3)
    gen = torch.Generator().manual_seed(1)

    def batch(source):
        idx = torch.randint(0, len(source) - context - 1, (args.batch,), generator=gen).to(source.device)
        offsets = torch.arange(context + 1, device=source.device)
        window = source[idx[:, None] + offsets]
        return window[:, :context], window[:, context]

    start = time.perf_counter()
    for step in range(1, args.steps + 1):
        x, y = batch(train)
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        ref_loss = nn.functional.cross_entropy(reference(x.cpu()), y.cpu())
        ref_opt.zero_grad()
        ref_loss.backward()
        ref_opt.step()
        if step % 50 == 0 or step == 1:
            with torch.no_grad():
                vx, vy = batch(val)
                val_loss = nn.functional.cross_entropy(model(vx), vy).item()
            print(f"step {step:4d}  loss {loss.item():.4f}  (cpu {ref_loss.item():.4f})  val {val_loss:.4f}  "
                  f"npu memory {torch.npu.memory_allocated(device) / 2**20:.1f} MiB allocated, "
                  f"{torch.npu.memory_reserved(device) / 2**20:.1f} MiB reserved")
            if abs(loss.item() - ref_loss.item()) > 1e-3 * max(1.0, ref_loss.item()):
                raise SystemExit(f"npu and cpu diverged at step {step}: {loss.item()} vs {ref_loss.item()}")
    elapsed = time.perf_counter() - start
    print(f"done: {args.steps} steps in {elapsed:.1f}s; npu and cpu agree; "
          f"final loss {loss.item():.3f} (uniform would be {torch.log(torch.tensor(256.0)).item():.3f})")


if __name__ == "__main__":
    main()
