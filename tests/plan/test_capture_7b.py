"""A 7B-parameter decoder (LLaMA-7B's shapes) under FSDP2 x TP (DTensor, TP 8 inside a node, FSDP2 over the 8
nodes) captured by ``python -m npudist.plan capture`` at 64 logical npus: per-rank parameter bytes and per-layer
collectives within 1 % of what the layout implies, each rank's groups after expansion."""
import math
import os
import subprocess
import sys
from collections import Counter

import pytest

from npudist.plan import trace as st
from npudist.plan.cost import collective_kind

pytestmark = pytest.mark.timeout(900)
HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
DIM, LAYERS, HEADS, FFN, VOCAB, SEQ, TP, NODES = 4096, 32, 32, 11008, 32000, 512, 8, 8
WORLD, DP = NODES * 8, NODES * 8 // TP
COLWISE, ROWWISE = ("wq", "wk", "wv", "w1", "w3"), ("wo", "w2")


@pytest.fixture(scope="module")
def captured(tmp_path_factory):
    out = tmp_path_factory.mktemp("cap7b")
    cmd = [sys.executable, "-m", "npudist.plan", "capture", "--hardware", os.path.join(HERE, "hw_test.toml"),
           "--nnodes", str(NODES), "--nproc-per-node", "8", "--out", str(out),
           os.path.join(HERE, "workers", "train_decoder.py"), "--dim", str(DIM), "--layers", str(LAYERS), "--heads",
           str(HEADS), "--ffn", str(FFN), "--vocab", str(VOCAB), "--seq", str(SEQ), "--batch", "1", "--tp", str(TP),
           "--steps", "2"]
    r = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO, timeout=880)
    assert r.returncode == 3, r.stdout[-3000:] + r.stderr[-3000:]  # 7B does not fit the 1 GiB test device
    return st.load_dir(str(out))


def _layout():
    """(bf16 bytes of one layer's local shard, of the root's local shard): TP shards first (Colwise: rows / TP,
    Rowwise: columns / TP), then FSDP2's dim-0 shard over DP, padded to a multiple of DP rows."""
    def local(rows, cols):
        return math.ceil(rows / DP) * cols * 2
    layer = sum(local(DIM // TP, DIM) for _ in ("wq", "wk", "wv")) + local(DIM, DIM // TP)   # attention
    layer += 2 * local(FFN // TP, DIM) + local(DIM, FFN // TP) + 2 * local(DIM, 1)          # MLP, two RMSNorms
    root = local(VOCAB, DIM) * 2 + local(DIM, 1)                                             # embedding, head, norm
    return layer, root


def test_7b_parameter_bytes_per_rank(captured):
    t = captured[0]
    assert len(captured) == WORLD and t["world_size"] == WORLD
    layer, root = _layout()
    colls = [o for o in t["ops"] if o["kind"] == "collective"]
    ag = [o for o in colls if collective_kind(o["name"]) == "all_gather"]
    # the forward all-gathers (the root's, then each layer's) take this rank's parameters, bf16 under the
    # mixed-precision policy
    forward = ag[:LAYERS + 1]
    per_rank = sum(o["in_bytes"] for o in forward)
    assert per_rank == pytest.approx(LAYERS * layer + root, rel=0.01)
    # what was allocated before the step: fp32 parameters and AdamW's two states of the same shards
    fp32 = (LAYERS * layer + root) * 2
    assert t["memory"]["baseline_allocated"] == pytest.approx(3 * fp32, rel=0.03)
    # the whole model from the shards: layers split over TP x DP, the root (not TP-parallel) over DP
    assert (LAYERS * layer * TP + root) / 2 * DP == pytest.approx(6.74e9, rel=0.01)  # LLaMA-7B's parameter count


def test_7b_collectives_per_layer(captured):
    t = captured[0]
    layer, root = _layout()
    colls = [o for o in t["ops"] if o["kind"] == "collective"]
    by = Counter((collective_kind(o["name"]), len(o["group_ranks"])) for o in colls)
    # FSDP2 over the dp group: each layer gathered for forward and backward, the root once; one reduce-scatter each;
    # TP: forward all_reduce after each RowwiseParallel, backward all_reduce of each ColwiseParallel's input grad
    assert by == Counter({("all_gather", DP): 2 * LAYERS + 1, ("reduce_scatter", DP): LAYERS + 1,
                          ("all_reduce", TP): LAYERS * (len(ROWWISE) + len(COLWISE))}), by
    ag = Counter(o["out_bytes"] for o in colls if collective_kind(o["name"]) == "all_gather")
    assert ag == {layer * DP: 2 * LAYERS, root * DP: 1}
    rs = Counter(o["in_bytes"] for o in colls if collective_kind(o["name"]) == "reduce_scatter")
    assert rs == {layer * DP * 2: LAYERS, root * DP * 2: 1}  # gradients reduced in fp32
    ar = {o["bytes"] for o in colls if collective_kind(o["name"]) == "all_reduce"}
    assert ar == {SEQ * DIM * 2}  # one micro-batch's activations, bf16
    dp_group = [o["group_ranks"] for o in colls if collective_kind(o["name"]) == "all_gather"][0]
    tp_group = [o["group_ranks"] for o in colls if collective_kind(o["name"]) == "all_reduce"][0]
    assert dp_group == list(range(0, WORLD, TP)) and tp_group == list(range(TP))
    # rank 9's expanded trace: its own tp group (8-15) and dp group (1, 9, ..., 57)
    c9 = [o for o in captured[9]["ops"] if o["kind"] == "collective"]
    assert {tuple(o["group_ranks"]) for o in c9} == {tuple(range(8, 16)), tuple(range(1, WORLD, TP))}
