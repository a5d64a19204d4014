"""A training step written for torch_npu: torch_npu imports, its fused ops, torch_npu.npu / torch.npu calls,
torch_npu.npu.amp and torch_npu.profiler. Runs on 1 rank or more (hccl when WORLD_SIZE > 1).

argv[1]: the directory for the profiler traces.
"""
# The imports stand as a user's script has them (torch_npu's lines first): their order is the point.
# isort: skip_file
import os
import sys

import torch
import torch_npu
import torch.distributed as dist

from _report import report

local_rank = int(os.environ.get("LOCAL_RANK", "0"))
world = int(os.environ.get("WORLD_SIZE", "1"))
torch_npu.npu.set_device(local_rank)
torch_npu.npu.set_compile_mode(jit_compile=False)
torch_npu.npu.config.allow_internal_format = False
if world > 1:
    dist.init_process_group("hccl")
device = f"npu:{local_rank}"
torch.manual_seed(0)

B, S, N, D, E = 2, 8, 2, 16, 4
H = N * D
w_qkv = torch.nn.Parameter(torch.randn(H, 3 * H, device=device) * 0.1)
gamma = torch.nn.Parameter(torch.ones(H, device=device))
experts = torch.nn.Parameter(torch.randn(E, H, 2 * H, device=device) * 0.1)
router = torch.nn.Parameter(torch.randn(H, E, device=device) * 0.1)
params = [w_qkv, gamma, experts, router]
opt = torch.optim.AdamW(params, lr=1e-3)
pos = torch.arange(S, device=device, dtype=torch.float32)[:, None] / (10000 ** (torch.arange(0, D, 2, device=device) / D))
cos = torch.cat([pos.cos(), pos.cos()], -1)[None, :, None, :]  # [1, S, 1, D]
sin = torch.cat([pos.sin(), pos.sin()], -1)[None, :, None, :]


def step(x):
    h = torch_npu.npu_rms_norm(x, gamma, epsilon=1e-6)[0]
    q, k, v = (h @ w_qkv).split(H, dim=-1)
    q = torch_npu.npu_rotary_mul(q.reshape(B, S, N, D), cos, sin).reshape(B, S, H)
    k = torch_npu.npu_rotary_mul(k.reshape(B, S, N, D), cos, sin).reshape(B, S, H)
    mask = torch.triu(torch.ones(S, S, dtype=torch.bool, device=device), diagonal=1)
    attn = torch_npu.npu_fusion_attention(q, k, v, N, "BSH", atten_mask=mask, scale=D ** -0.5, keep_prob=1.0,
                                          sparse_mode=0)[0]
    tokens = attn.reshape(B * S, H)
    probs, top, _ = torch_npu.npu_moe_gating_top_k_softmax(tokens @ router, None, k=2)
    permuted, sorted_idx = torch_npu.npu_moe_token_permute(tokens, top)
    counts = torch.bincount(top.reshape(-1).long(), minlength=E)
    expert_out = torch_npu.npu_grouped_matmul([permuted], [experts], group_list=counts, group_list_type=1,
                                              group_type=0, split_item=3)[0]
    expert_out = torch_npu.npu_swiglu(expert_out, dim=-1)
    out = torch_npu.npu_moe_token_unpermute(expert_out, sorted_idx, probs=probs)
    return out.float().pow(2).mean()


prof_dir = sys.argv[1]
prof = torch_npu.profiler.profile(
    activities=[torch_npu.profiler.ProfilerActivity.CPU, torch_npu.profiler.ProfilerActivity.NPU],
    schedule=torch_npu.profiler.schedule(wait=0, warmup=0, active=1, repeat=1),
    on_trace_ready=torch_npu.profiler.tensorboard_trace_handler(prof_dir),
    experimental_config=torch_npu.profiler._ExperimentalConfig(
        profiler_level=torch_npu.profiler.ProfilerLevel.Level1,
        aic_metrics=torch_npu.profiler.AiCMetrics.PipeUtilization, export_type=torch_npu.profiler.ExportType.Text))
losses, grads_flow = [], []
with prof:
    for i in range(3):
        x = torch.randn(B, S, H, generator=torch.Generator().manual_seed(i)).npu()
        with torch_npu.npu.amp.autocast(dtype=torch.bfloat16, enabled=False):
            loss = step(x)
        loss.backward()
        grads_flow.append(all(p.grad is not None and float(p.grad.abs().sum()) > 0 for p in params))
        if world > 1:
            for p in params:
                dist.all_reduce(p.grad, op=dist.ReduceOp.AVG)
        opt.step()
        opt.zero_grad()
        losses.append(loss.item())
        prof.step()
torch_npu.npu.synchronize()
report(losses=losses, device=str(w_qkv.device), soc=torch_npu.npu.get_soc_version(),
       mem=torch_npu.npu.memory_allocated() > 0, npu_is_torch_npu=torch_npu.npu is torch.npu,
       version=torch_npu.__version__, traces=sorted(os.listdir(prof_dir)), rank=int(os.environ.get("RANK", "0")),
       grads_flow=grads_flow)
if world > 1:
    dist.destroy_process_group()
