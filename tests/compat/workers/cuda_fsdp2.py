"""An FSDP2 training script written for CUDA; the only change is the two torch_npu imports at the top."""
# The imports stand as a user's script has them (torch_npu's lines first): their order is the point.
# isort: skip_file
import torch_npu  # noqa: F401  (the one line a CUDA script adds for npu)
from torch_npu.contrib import transfer_to_npu  # noqa: F401  (importing it redirects cuda calls to npu)

import os

import torch
import torch.distributed as dist
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import fully_shard
from torch.testing._internal.distributed._tensor.common_dtensor import ModelArgs, Transformer

from _report import report


def main():
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)
    dist.init_process_group("nccl", device_id=torch.device(f"cuda:{local_rank}"))
    mesh = init_device_mesh("cuda", (dist.get_world_size(),))
    torch.manual_seed(0)
    args = ModelArgs(n_layers=2, n_heads=2, dim=32, vocab_size=64, max_seq_len=16, dropout_p=0, weight_tying=False)
    model = Transformer(args).cuda()
    ref = None
    if dist.get_rank() == 0:
        ref = Transformer(args)
        ref.load_state_dict({k: v.cpu() for k, v in model.state_dict().items()})
        ref_opt = torch.optim.AdamW(ref.parameters(), lr=1e-2)
    for layer in model.layers:
        fully_shard(layer, mesh=mesh)
    fully_shard(model, mesh=mesh)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    gen = torch.Generator().manual_seed(7)
    losses = []
    for _ in range(3):
        tokens = torch.randint(0, 64, (4, 16), generator=gen)  # the same batch on every rank
        loss = model(tokens.cuda()).float().pow(2).mean()
        loss.backward()
        opt.step()
        opt.zero_grad()
        losses.append(loss.item())
        if ref is not None:
            ref_loss = ref(tokens).float().pow(2).mean()
            ref_loss.backward()
            ref_opt.step()
            ref_opt.zero_grad()
    torch.cuda.synchronize()
    full = {n: p.full_tensor().detach().cpu() for n, p in model.named_parameters()}
    diff = None
    if ref is not None:
        diff = max(float((full[n] - p.detach()).abs().max()) for n, p in ref.named_parameters())
    report(mesh_device=mesh.device_type, local_devices=sorted({str(p.to_local().device) for p in model.parameters()}),
           losses=losses, max_diff_vs_unsharded=diff, backend=dist.get_backend())
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
