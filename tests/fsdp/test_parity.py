"""FSDP2 (fully_shard) and DDP on npu + hccl match a single-process reference over a few steps:
fp32 and bf16 (param bfloat16, reduce float32) policies, meta-device init, reshard after forward
both ways, explicit prefetch, clip_grad_norm_ over DTensor gradients, HSDP on a 2x2 mesh
(4 ranks); DDP with small buckets and comm hooks, no_sync, find_unused_parameters,
static_graph (--full); and the torch.accelerator calls generic code makes.

Every rank (``parity_on_rank``, run by npudist.testing.multiproc.run_on_ranks) also runs the
reference: the same model (same initial weights) on the whole global batch (all ranks' rows),
with the same optimizer, so a correct data-parallel step gives the same loss, gradient norm and
parameters (fp32: tight tolerances; bf16 parameters: loose ones).
"""
import copy
import os

import pytest
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributed.checkpoint.state_dict import StateDictOptions, get_model_state_dict
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import CPUOffloadPolicy, MixedPrecisionPolicy, fully_shard
from torch.distributed.tensor import DTensor
from torch.nn.parallel import DistributedDataParallel as DDP

from npudist.testing.multiproc import run_on_ranks
from tests.fsdp.tiny_gpt import GPT, TINY, B, Checker, global_batch

STEPS = 3
LR = 0.1


def sgd(params):
    return torch.optim.SGD(params, lr=LR, momentum=0.9)


def full_params(model):
    return {n: (p.full_tensor() if isinstance(p, DTensor) else p).detach().float().cpu()
            for n, p in model.named_parameters()}


def reference_from(state, dev):
    ref = GPT(TINY).to(dev)
    ref.load_state_dict({k: v.to(dev) for k, v in state.items()})
    return ref


def ref_step(ref, opt, batch, clip):
    _, loss = ref(batch[:, :-1], batch[:, 1:])
    loss.backward()
    norm = torch.nn.utils.clip_grad_norm_(ref.parameters(), clip)
    opt.step()
    opt.zero_grad()
    return loss.detach(), norm.detach()


def fsdp_case(c, name, rank, world, dev, *, mp="fp32", reshard=True, meta=True, offload=False, mesh=None,
              divide_factor=None, force_sum=False, rtol=1e-5, atol=1e-5):
    policy = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32) if mp == "bf16" \
        else MixedPrecisionPolicy()
    kw = dict(mp_policy=policy, reshard_after_forward=reshard, mesh=mesh)
    if offload:
        kw["offload_policy"] = CPUOffloadPolicy()
    torch.manual_seed(0)
    if meta:
        with torch.device("meta"):
            model = GPT(TINY)
    else:
        model = GPT(TINY)  # cpu, materialised: fully_shard shards the existing values
    for blk in model.blocks:
        fully_shard(blk, **kw)
    fully_shard(model, **kw)
    blocks = list(model.blocks)
    blocks[0].set_modules_to_forward_prefetch([blocks[1]])
    blocks[1].set_modules_to_backward_prefetch([blocks[0]])
    if meta:
        model.to_empty(device="cpu" if offload else dev)
        torch.manual_seed(1)
        model.init_weights()
    elif not offload:
        model.to(dev)
    if divide_factor is not None:
        model.set_gradient_divide_factor(divide_factor)
    if force_sum:
        model.set_force_sum_reduction_for_comms(True)
    local_dev = next(model.parameters()).to_local().device
    c.true(local_dev.type == ("cpu" if offload else "npu"),
           f"{name}: sharded parameters live on {'cpu' if offload else 'npu'}", str(local_dev))
    full = get_model_state_dict(model, options=StateDictOptions(full_state_dict=True))
    if meta:  # init_weights: normal(0, 0.02) on the sharded DTensors
        c.true(0.01 < float(full["blocks.0.fc.weight"].float().std()) < 0.03, f"{name}: init std plausible",
               str(float(full["blocks.0.fc.weight"].float().std())))
    ref = reference_from({k: v.full_tensor() if isinstance(v, DTensor) else v for k, v in full.items()}, dev)
    ropt, opt = sgd(ref.parameters()), sgd(model.parameters())
    dp_rank = rank
    for step in range(STEPS):
        gb = global_batch(step, world)
        rloss, rnorm = ref_step(ref, ropt, gb.to(dev), clip=1.0)
        mine = gb[dp_rank * B:(dp_rank + 1) * B].to(dev)
        _, loss = model(mine[:, :-1], mine[:, 1:])
        loss.backward()
        norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        norm = norm.full_tensor() if isinstance(norm, DTensor) else norm
        opt.step()
        opt.zero_grad()
        mean_loss = loss.detach().clone()
        dist.all_reduce(mean_loss, op=dist.ReduceOp.AVG)
        c.close(mean_loss, rloss, f"{name}: step {step} loss", rtol=rtol, atol=atol, exact_dtype=False)
        c.close(norm, rnorm, f"{name}: step {step} grad norm (clip_grad_norm_ over DTensor grads)",
                rtol=rtol * 10, atol=atol * 10, exact_dtype=False)
    got, want = full_params(model), full_params(ref)
    worst = max(float((got[k] - want[k]).abs().max()) for k in want)
    c.true(worst <= atol * 20, f"{name}: parameters after {STEPS} steps", f"max abs diff {worst}")
    c.info[name] = worst


def ddp_case(c, name, rank, world, dev, *, hook=None, accumulate=False, unused=False, static=False,
             rtol=1e-5, atol=1e-5):
    torch.manual_seed(0)
    base = GPT(TINY).to(dev)
    if unused:
        base.extra = nn.Linear(TINY.d_model, TINY.d_model).to(dev)  # never used in forward
    ref = copy.deepcopy(base)
    model = DDP(base, device_ids=[dev], bucket_cap_mb=0.01, find_unused_parameters=unused, static_graph=static)
    if hook == "allreduce":
        from torch.distributed.algorithms.ddp_comm_hooks.default_hooks import allreduce_hook
        model.register_comm_hook(None, allreduce_hook)
    elif hook == "bf16":
        from npudist.fsdp import npu_bf16_compress_hook  # torch's bf16_compress_hook is CUDA/XPU only
        model.register_comm_hook(None, npu_bf16_compress_hook)
    ropt, opt = sgd(ref.parameters()), sgd(model.parameters())
    micro = 2 if accumulate else 1
    for step in range(STEPS):
        gb = global_batch(step, world, rows=B * micro)
        rloss, rnorm = ref_step(ref, ropt, gb.to(dev), clip=1.0)
        mine = gb.view(world, micro, B, -1)[rank].to(dev)
        total = torch.zeros((), device=dev)
        for m in range(micro):
            ctx = model.no_sync() if m < micro - 1 else torch.enable_grad()
            with ctx:
                _, loss = model(mine[m][:, :-1], mine[m][:, 1:])
                (loss / micro).backward()
            total += loss.detach() / micro
        norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad()
        dist.all_reduce(total, op=dist.ReduceOp.AVG)
        c.close(total, rloss, f"{name}: step {step} loss", rtol=rtol, atol=atol, exact_dtype=False)
        c.close(norm, rnorm, f"{name}: step {step} grad norm", rtol=rtol * 10, atol=atol * 10, exact_dtype=False)
    got, want = full_params(model.module), full_params(ref)
    worst = max(float((got[k] - want[k]).abs().max()) for k in want)
    c.true(worst <= atol * 20, f"{name}: parameters after {STEPS} steps", f"max abs diff {worst}")
    c.info[name] = worst


def generic_device_code(c, rank, world, dev):
    """What CUDA-generic code calls, on npu."""
    acc = torch.accelerator.current_accelerator()
    c.true(acc is not None and acc.type == "npu", "accelerator is npu", str(acc))
    c.true(torch.accelerator.is_available(), "accelerator available")
    c.true(torch.accelerator.device_count() >= world, "device_count", str(torch.accelerator.device_count()))
    c.true(torch.accelerator.current_device_index() == dev.index, "current_device_index is LOCAL_RANK")
    other = (dev.index + 1) % torch.accelerator.device_count()
    with torch.accelerator.device_index(other):
        c.true(torch.accelerator.current_device_index() == other, "device_index() context")
        c.true(torch.empty(1, device="npu").device.index == other, "tensors follow it")
    c.true(torch.accelerator.current_device_index() == dev.index, "device_index() restores")
    torch.accelerator.set_device_index(dev.index)
    c.true(dist.get_default_backend_for_device(dev) == "hccl", "default backend for npu is hccl")
    c.true(dist.group.WORLD.bound_device_id == dev, "default group bound to the device")


def parity_on_rank(tier):
    """Runs on every rank (run_on_ranks: the hccl group is up): the cases of ``tier`` ('fast' or
    'full'); reports the Checker's summary."""
    rank, world = dist.get_rank(), dist.get_world_size()
    dev = torch.device("npu", torch.npu.current_device())
    c = Checker()
    c.run("generic", generic_device_code, c, rank, world, dev)
    cases = [("fsdp fp32 meta-init reshard", dict()),
             ("fsdp bf16 params fp32 reduce", dict(mp="bf16", rtol=3e-2, atol=3e-2)),
             ("ddp buckets allreduce_hook", dict(ddp=True, hook="allreduce"))]
    if tier == "full" or world == 4:
        cases += [("fsdp fp32 no reshard after forward", dict(reshard=False, meta=False))]
    if tier == "full":
        cases += [("fsdp divide factor (PREMUL_SUM)", dict(divide_factor=float(world))),
                  ("fsdp force sum reduction", dict(force_sum=True)),
                  ("ddp bf16_compress_hook", dict(ddp=True, hook="bf16", rtol=2e-2, atol=2e-2)),
                  ("ddp no_sync accumulation", dict(ddp=True, accumulate=True)),
                  ("ddp find_unused_parameters", dict(ddp=True, unused=True)),
                  ("ddp static_graph", dict(ddp=True, static=True))]
    if world == 4:
        mesh = init_device_mesh("npu", (2, 2), mesh_dim_names=("replicate", "shard"))
        cases += [("hsdp 2x2 mesh", dict(mesh=mesh))]
    if tier == "full":
        cases += [("fsdp cpu offload", dict(offload=True, meta=False))]
    only = os.environ.get("PARITY_CASES")  # debugging: comma-separated substrings of case names
    for name, kw in cases:
        if only and not any(o in name for o in only.split(",")):
            continue
        if kw.pop("ddp", False):
            c.run(name, ddp_case, c, name, rank, world, dev, **kw)
        else:
            c.run(name, fsdp_case, c, name, rank, world, dev, **kw)
    c.report()


def _check(r, nranks, min_checks):
    assert r.returncodes == [0] * nranks, r.explain()
    for rank in range(nranks):
        res = r.summary(rank)
        assert res is not None, r.explain()
        assert res["failures"] == [], "\n".join(res["failures"])
        assert res["checks"] >= min_checks, res


@pytest.mark.timeout(300)
@pytest.mark.parametrize("nranks", [2, 4])
def test_fsdp_ddp_parity(nranks):
    r = run_on_ranks(parity_on_rank, nranks, "fast", timeout=240)
    _check(r, nranks, 30 if nranks == 2 else 50)


@pytest.mark.slow
@pytest.mark.timeout(400)
@pytest.mark.parametrize("nranks", [2, 4])
def test_fsdp_ddp_parity_full(nranks):
    r = run_on_ranks(parity_on_rank, nranks, "full", timeout=340)
    _check(r, nranks, 80)
