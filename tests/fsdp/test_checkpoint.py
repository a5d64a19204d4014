"""torch.distributed.checkpoint with FSDP2 on npu: sharded save (dcp.save, and dcp.async_save
on npudist.fsdp.checkpoint_process_group()), round trip on the same ranks, and loading on a
different number of ranks (resharding), checked value by value and by the next step's loss.

The ranks run ``dcp_on_rank`` (npudist.testing.multiproc.run_on_ranks): FSDP2 model + AdamW state,

    save DIR   train 2 steps, dcp.save (sharded) to DIR/sync, dcp.async_save on its own group to
               DIR/async; load DIR/sync into a fresh model on the same ranks and compare; write
               the full state (DIR/ref.pt) and the loss of the next step (DIR/next.json)
    load DIR   on any number of ranks: load DIR/sync and DIR/async, compare with ref.pt, take the
               next step and compare its loss with next.json
Every step uses the same 12 global rows, split over the ranks, so the loss does not depend on
the number of ranks.
"""
import json
import os

import pytest
import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp
from torch.distributed.checkpoint.state_dict import (
    StateDictOptions,
    get_model_state_dict,
    get_state_dict,
    set_state_dict,
)
from torch.distributed.fsdp import fully_shard

from npudist.fsdp import checkpoint_process_group
from npudist.testing.multiproc import run_on_ranks
from tests.fsdp.tiny_gpt import GPT, TINY, Checker, global_batch

ROWS = 12  # divisible by 2, 3 and 4 ranks


def build(dev):
    with torch.device("meta"):
        model = GPT(TINY)
    for blk in model.blocks:
        fully_shard(blk)
    fully_shard(model)
    model.to_empty(device=dev)
    torch.manual_seed(0)
    model.init_weights()
    return model, torch.optim.AdamW(model.parameters(), lr=1e-2)


def step(model, opt, i, rank, world, dev):
    gb = global_batch(i, 1, rows=ROWS)
    per = ROWS // world
    mine = gb[rank * per:(rank + 1) * per].to(dev)
    _, loss = model(mine[:, :-1], mine[:, 1:])
    loss.backward()
    opt.step()
    opt.zero_grad()
    loss = loss.detach().clone()
    dist.all_reduce(loss, op=dist.ReduceOp.AVG)
    return float(loss)


def full_state(model, opt):
    """Model and optimizer state as full cpu tensors (collective)."""
    msd, osd = get_state_dict(model, opt, options=StateDictOptions(full_state_dict=True))
    flat = {f"model.{k}": v for k, v in msd.items()}
    for pid, st in osd["state"].items():
        for k, v in st.items():
            flat[f"optim.{pid}.{k}"] = v
    return {k: v.detach().float().cpu().clone() if torch.is_tensor(v) else torch.tensor(float(v)) for k, v in flat.items()}


def compare(c, name, got, want):
    c.true(set(got) == set(want), f"{name}: same keys", f"{sorted(set(got) ^ set(want))[:5]}")
    diffs = {k: float((got[k] - want[k]).abs().max()) for k in want if k in got}
    worst = max(diffs.values(), default=float("inf"))
    c.true(worst == 0.0, f"{name}: values equal",
           f"max abs diff {worst} ({[(k, got[k].flatten()[:2].tolist(), want[k].flatten()[:2].tolist()) for k, v in diffs.items() if v][:2]})")


def load_into(path, model, opt, group=None):
    msd, osd = get_state_dict(model, opt)
    state = {"model": msd, "optim": osd}
    dcp.load(state, checkpoint_id=path, process_group=group)
    set_state_dict(model, opt, model_state_dict=state["model"], optim_state_dict=state["optim"])


def save_phase(c, d, rank, world, dev):
    model, opt = build(dev)
    for i in range(2):
        step(model, opt, i, rank, world, dev)
    msd, osd = get_state_dict(model, opt)
    c.true(all(type(v).__name__ == "DTensor" and v.device.type == "npu" for v in msd.values()),
           "sharded state dict holds DTensors on npu")
    dcp.save({"model": msd, "optim": osd}, checkpoint_id=os.path.join(d, "sync"))
    group = checkpoint_process_group()
    fut = dcp.async_save({"model": msd, "optim": osd}, checkpoint_id=os.path.join(d, "async"), process_group=group)
    # the training loop may go on while the async save runs; here: a collective on the default group
    probe = torch.ones(1, device=dev)
    dist.all_reduce(probe)
    fut.result()
    c.true(os.path.exists(os.path.join(d, "async", ".metadata")), "async_save wrote .metadata")
    ref = full_state(model, opt)
    # round trip on the same ranks, into a fresh model whose weights differ
    model2, opt2 = build(dev)
    with torch.no_grad():
        for p in model2.parameters():
            p.add_(1.0)
    step(model2, opt2, 0, rank, world, dev)  # creates optimizer state to be overwritten
    load_into(os.path.join(d, "sync"), model2, opt2)
    compare(c, f"round trip on {world} ranks", full_state(model2, opt2), ref)
    nxt = step(model, opt, 2, rank, world, dev)
    nxt2 = step(model2, opt2, 2, rank, world, dev)
    c.true(abs(nxt - nxt2) <= 1e-6, "next step after round trip", f"{nxt} vs {nxt2}")
    if rank == 0:
        torch.save(ref, os.path.join(d, "ref.pt"))
        with open(os.path.join(d, "next.json"), "w") as f:
            json.dump({"loss": nxt, "world": world}, f)
    dist.barrier()


def load_phase(c, d, rank, world, dev):
    ref = torch.load(os.path.join(d, "ref.pt"))
    with open(os.path.join(d, "next.json")) as f:
        saved = json.load(f)
    c.info["saved_on"] = saved["world"]
    for kind in ("sync", "async"):
        model, opt = build(dev)
        load_into(os.path.join(d, kind), model, opt)
        compare(c, f"{kind} checkpoint saved on {saved['world']} ranks, loaded on {world}", full_state(model, opt),
                ref)
        loss = step(model, opt, 2, rank, world, dev)
        c.close(loss, saved["loss"], f"{kind}: next step's loss", rtol=1e-5, atol=1e-6, exact_dtype=False)
    # a full (unsharded) state dict of the same checkpoint loads into a plain module too
    plain = GPT(TINY).to(dev)
    sd = get_model_state_dict(plain)
    dcp.load({"model": sd}, checkpoint_id=os.path.join(d, "sync"))
    plain.load_state_dict(sd)
    got = {f"model.{k}": v.detach().float().cpu() for k, v in plain.state_dict().items()}
    compare(c, "into a non-sharded module", got, {k: v for k, v in ref.items() if k.startswith("model.")})


def dcp_on_rank(phase, d):
    """Runs on every rank (run_on_ranks: the hccl group is up): ``phase`` 'save' or 'load' with
    checkpoint directory ``d``; reports the Checker's summary."""
    d = str(d)
    rank, world = dist.get_rank(), dist.get_world_size()
    dev = torch.device("npu", torch.npu.current_device())
    c = Checker()
    c.run(phase, save_phase if phase == "save" else load_phase, c, d, rank, world, dev)
    c.report()


def _ok(r, n):
    assert r.returncodes == [0] * n, r.explain()
    for rank in range(n):
        res = r.summary(rank)
        assert res is not None, r.explain()
        assert res["failures"] == [], "\n".join(res["failures"])
        assert res["checks"] >= 5, res


@pytest.mark.timeout(400)
def test_save_on_4_load_on_2(tmp_path):
    _ok(run_on_ranks(dcp_on_rank, 4, "save", tmp_path, timeout=180), 4)
    _ok(run_on_ranks(dcp_on_rank, 2, "load", tmp_path, timeout=180), 2)


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_save_on_2_load_on_4_and_3(tmp_path):
    _ok(run_on_ranks(dcp_on_rank, 2, "save", tmp_path, timeout=180), 2)
    _ok(run_on_ranks(dcp_on_rank, 4, "load", tmp_path, timeout=180), 4)
    # 3 ranks: uneven shards (FSDP2 pads dim 0)
    _ok(run_on_ranks(dcp_on_rank, 3, "load", tmp_path, timeout=180), 3)
