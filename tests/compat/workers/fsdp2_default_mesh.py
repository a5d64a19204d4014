"""An FSDP2 training script written for CUDA/any accelerator, run unchanged on npu.

It picks its device only through torch.accelerator and
init_process_group(device_id=...) (torch.accelerator.device_index(rank) is not
entered, so it does nothing), builds the model on meta, calls fully_shard with
no mesh, then materialises on its device and trains — the shape of the FSDP2
example in pytorch/examples. On CUDA the default mesh's device comes from
LOCAL_RANK because torch.cuda.is_initialized() is still False at fully_shard.

Rank 0 also trains an unsharded copy on cpu with the same initial weights and
data, so the test can compare parameters after training.
"""
import os

import torch
from _report import report
from torch.distributed.fsdp import fully_shard
from torch.testing._internal.distributed._tensor.common_dtensor import ModelArgs, Transformer

rank = int(os.environ["LOCAL_RANK"])
if torch.accelerator.is_available():
    device_type = torch.accelerator.current_accelerator()
    device = torch.device(f"{device_type}:{rank}")
    torch.accelerator.device_index(rank)
else:
    device = torch.device("cpu")
backend = torch.distributed.get_default_backend_for_device(device)
torch.distributed.init_process_group(backend=backend, device_id=device)
torch.manual_seed(0)
vocab_size, batch_size, seq_len = 64, 4, 16
args = ModelArgs(n_layers=2, n_heads=2, dim=32, vocab_size=vocab_size, max_seq_len=seq_len, dropout_p=0,
                 weight_tying=False)
with torch.device("meta"):
    model = Transformer(args)
init_before_shard = torch.npu.is_initialized()
for layer in model.layers:
    fully_shard(layer)
fully_shard(model)
current_after_shard = torch.npu.current_device()
model.to_empty(device=device)
with torch.no_grad():
    for p in model.parameters():  # (pytorch/examples' model has reset_parameters; this one does not)
        p.normal_(0.0, 0.1)

full = {n: p.full_tensor().detach().cpu() for n, p in model.named_parameters()}
ref = None
if rank == 0:
    with torch.device("meta"):
        ref = Transformer(args)
    ref.to_empty(device="cpu")
    ref.load_state_dict(full)
    ref_opt = torch.optim.Adam(ref.parameters(), lr=1e-2)

optim = torch.optim.Adam(model.parameters(), lr=1e-2)
losses, grad_devices = [], set()
for _step in range(3):
    x = torch.randint(0, vocab_size, (batch_size, seq_len), device=device)  # same on every rank (same seed)
    loss = model(x).sum()
    loss.backward()
    grad_devices |= {str(p.grad.to_local().device) for p in model.parameters()}
    torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
    optim.step()
    optim.zero_grad()
    losses.append(loss.item())
    if ref is not None:
        ref_loss = ref(x.cpu()).sum()
        ref_loss.backward()
        torch.nn.utils.clip_grad_norm_(ref.parameters(), max_norm=1.0)
        ref_opt.step()
        ref_opt.zero_grad()

final = {n: p.full_tensor().detach().cpu() for n, p in model.named_parameters()}
max_diff = None
if ref is not None:
    max_diff = max(float((final[n] - p.detach()).abs().max()) for n, p in ref.named_parameters())
report(init_before_shard=init_before_shard, current_after_shard=current_after_shard,
       param_devices=sorted({str(p.to_local().device) for p in model.parameters()}),
       mesh_devices=sorted({str(p.device_mesh.device_type) for p in model.parameters()}),
       grad_devices=sorted(grad_devices), losses=losses, max_diff_vs_unsharded=max_diff)
torch.distributed.destroy_process_group()
