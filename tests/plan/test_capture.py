"""Logical capture, the first part of the planner: an FSDP2 step at 64 logical npus (8 nodes of 8) without running
kernels: per-layer collective counts and bytes as the layout implies, and a prediction from it."""
import os
import subprocess
import sys
from collections import Counter

import pytest

from npudist.plan import hardware, trace
from npudist.plan.capture import expand
from npudist.plan.cost import collective_kind
from npudist.plan.predict import predict

pytestmark = pytest.mark.timeout(300)
HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
WORLD, D, LAYERS = 64, 1024, 4


@pytest.fixture(scope="module")
def captured(tmp_path_factory):
    out = tmp_path_factory.mktemp("cap") / "rank0.steptrace.json"
    env = dict(os.environ, PYTHONPATH=REPO, NPUDIST_DEVICE_COUNT="1")
    r = subprocess.run([sys.executable, os.path.join(HERE, "workers", "capture_fsdp.py"), str(WORLD), str(out)],
                       capture_output=True, text=True, timeout=240, env=env, cwd=REPO)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-3000:]
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


P2P = """
import torch, torch.distributed as dist
import npudist
from torch._subclasses.fake_tensor import FakeTensorMode
from npudist.plan.capture import init_fake_world, StepRecorder
init_fake_world(8, 4)
g = dist.new_group([0, 4])
with FakeTensorMode(allow_non_fake_inputs=True):
    x = torch.ones(16, device="npu")
    with StepRecorder() as rec:
        dist.send(x, dst=0, group=g)
        y = torch.empty(16, device="npu")
        dist.recv(y, src=0, group=g)
        y * 2
print([(o["kind"], o.get("name"), o.get("peer"), o.get("is_p2p"), o.get("group_ranks"), o.get("seq"), o.get("bytes"))
       for o in rec.ops])
"""


def test_send_recv_are_recorded_with_their_peer():
    # a pipeline stage's sends and receives: global peer, p2p sequence numbers, the read of a receive waits for it
    r = subprocess.run([sys.executable, "-c", P2P], capture_output=True, text=True, timeout=120, cwd=REPO,
                       env=dict(os.environ, PYTHONPATH=REPO))
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.strip().splitlines()[-1] == str([("collective", "send", 0, True, [0, 4], 1, 64),
                                                     ("collective", "recv", 0, True, [0, 4], 2, 64),
                                                     ("wait_collective", None, None, True, None, 2, None),
                                                     ("kernel", "aten::mul", None, None, None, None, None)])
