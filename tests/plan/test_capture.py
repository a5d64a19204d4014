"""Logical capture, the first part of the planner: an FSDP2 step at 64 logical npus (8 nodes of 8) without running
kernels: per-layer collective counts and bytes as the layout implies, and a prediction from it."""
import json
import os
from collections import Counter

import pytest
import torch
import torch.distributed as dist
import torch.nn as nn
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import fully_shard

from npudist.plan import hardware, trace
from npudist.plan.capture import StepRecorder, expand, init_fake_world
from npudist.plan.cost import collective_kind
from npudist.plan.predict import predict
from npudist.testing.multiproc import run_on_ranks

pytestmark = pytest.mark.timeout(300)
HERE = os.path.dirname(os.path.abspath(__file__))
WORLD, D, LAYERS = 64, 1024, 4


BATCH, SEQ = 2, 128


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.up = nn.Linear(D, 4 * D)
        self.down = nn.Linear(4 * D, D)

    def forward(self, x):
        return x + self.down(torch.relu(self.up(x)))


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(256, D)
        self.blocks = nn.ModuleList(Block() for _ in range(LAYERS))
        self.head = nn.Linear(D, 256, bias=False)

    def forward(self, idx):
        x = self.emb(idx)
        for b in self.blocks:
            x = b(x)
        return self.head(x)


def capture_on_rank(world, out):
    """Runs in a rank of its own (run_on_ranks, no process group): captures one FSDP2 training step
    of a small decoder-like stack at ``world`` logical npus with npudist.plan.capture and writes
    its step trace to ``out``; returns the number of items captured."""
    init_fake_world(world, rank=0)
    torch.npu.set_device(0)
    mesh = init_device_mesh("npu", (world,))
    with torch.device("meta"):
        model = Model()
    for b in model.blocks:
        fully_shard(b, mesh=mesh)
    fully_shard(model, mesh=mesh)
    with FakeTensorMode(allow_non_fake_inputs=True):
        model.to_empty(device="npu")
        opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
        idx = torch.randint(0, 256, (BATCH, SEQ), device="npu")
        with StepRecorder(tokens=BATCH * SEQ, baseline=model.parameters()) as rec:
            model(idx).float().logsumexp(-1).mean().backward()
            opt.step()
            opt.zero_grad()
    with open(out, "w") as f:
        json.dump(rec.trace(), f)
    return len(rec.ops)


@pytest.fixture(scope="module")
def captured(tmp_path_factory):
    out = tmp_path_factory.mktemp("cap") / "rank0.steptrace.json"
    r = run_on_ranks(capture_on_rank, 1, WORLD, str(out), backend=None, env={"NPUDIST_DEVICE_COUNT": "1"},
                     timeout=240).check("capture")
    assert r.values()[0] > 0, r.explain()
    return trace.load(str(out))


def _padded(numels_dim0_rest, world):
    return sum(-(-d0 // world) * world * rest * 4 for d0, rest in numels_dim0_rest)


def test_collectives_per_layer_match_the_layout(captured):
    block = _padded([(4 * D, D), (4 * D, 1), (D, 4 * D), (D, 1)], WORLD)   # up.weight, up.bias, down.weight, down.bias
    root = _padded([(256, D), (256, D)], WORLD)                             # emb.weight, head.weight
    colls = [o for o in captured["ops"] if o["kind"] == "collective"]
    ag = Counter(o["out_bytes"] for o in colls if collective_kind(o["name"]) == "all_gather")
    rs = Counter(o["in_bytes"] for o in colls if collective_kind(o["name"]) == "reduce_scatter")
    # each block gathered for forward and again for backward; the root (reshard_after_forward left at its
    # default) keeps its parameters from forward to backward
    assert ag == Counter({block: 2 * LAYERS, root: 1}), (ag, block, root)
    assert rs == Counter({block: LAYERS, root: 1}), (rs, block, root)
    assert all(o["group_ranks"] == list(range(WORLD)) for o in colls)
    # compute: the forward and backward GEMMs of each block with their FLOPs
    mm_flops = sum(o["flops"] for o in captured["ops"] if o["kind"] == "kernel")
    tokens = captured["tokens_per_step"]
    gemm = 2 * tokens * (2 * 4 * D * D) * LAYERS + 2 * tokens * D * 256
    assert mm_flops == pytest.approx(3 * gemm, rel=0.01)  # forward + 2x backward
    waits = [o for o in captured["ops"] if o["kind"] == "wait_collective"]
    assert len(waits) >= 2 * LAYERS


def test_prediction_from_the_capture(captured, tmp_path):
    hw_file = tmp_path / "hw.toml"
    hw_file.write_text(open(os.path.join(HERE, "hw_test.toml")).read())
    hw = hardware.load(str(hw_file))
    p = predict(expand(captured, range(WORLD)), hw)
    assert p.step_time_s > 0 and len({r["Index"] for r in p.rows}) == WORLD
    assert all(r["Communication"] > 0 and r["Computing"] > 0 for r in p.rows)


def test_capture_memory_balances(captured):
    # what the step allocates and frees balances: after it, the sharded parameters (baseline) plus AdamW's
    # two states of the same shards remain; the peak (activations, unsharded blocks) lies above
    mem = captured["memory"]
    base = mem["baseline_allocated"]
    assert base > 0 and mem["events"]
    assert mem["events"][-1]["allocated"] == 3 * base
    assert mem["peak_allocated"] > 3 * base


def p2p_on_rank():
    """Runs in a rank of its own (no process group): rank 4 of 8 sends to and receives from rank 0 over a group
    [0, 4], then reads what it received; returns the recorded items' key fields."""
    init_fake_world(8, 4)
    g = dist.new_group([0, 4])
    with FakeTensorMode(allow_non_fake_inputs=True):
        x = torch.ones(16, device="npu")
        with StepRecorder() as rec:
            dist.send(x, dst=0, group=g)
            y = torch.empty(16, device="npu")
            dist.recv(y, src=0, group=g)
            y * 2
    return [[o["kind"], o.get("name"), o.get("peer"), o.get("is_p2p"), o.get("group_ranks"), o.get("seq"),
             o.get("bytes")] for o in rec.ops]


def test_send_recv_are_recorded_with_their_peer():
    # a pipeline stage's sends and receives: global peer, p2p sequence numbers, the read of a receive waits for it
    r = run_on_ranks(p2p_on_rank, 1, backend=None, env={"NPUDIST_DEVICE_COUNT": "1"}, timeout=120).check("p2p")
    assert r.values()[0] == [["collective", "send", 0, True, [0, 4], 1, 64],
                             ["collective", "recv", 0, True, [0, 4], 2, 64],
                             ["wait_collective", None, None, True, None, 2, None],
                             ["kernel", "aten::mul", None, None, None, None, None]], r.explain()
