"""The flagship (examples/train_gpt.py) at 2 ranks under npurun --profile: its step traces round-trip, hold
FSDP2's all-gathers and reduce-scatters per block with their bytes, predict its memory peak within 10 % of the
allocator's, and `python -m npudist.plan predict` reports the issue's keys."""
import json
import math
import os
import re
import subprocess
import sys
from collections import Counter

import pytest

from npudist.plan import trace as st
from npudist.plan.cost import collective_kind
from npudist.plan.memory import replay_memory
from npudist.testing.npurun import run_npurun

pytestmark = pytest.mark.timeout(420)
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HW = os.path.join(os.path.dirname(__file__), "hw_test.toml")
CFG = {"d_model": 64, "n_layer": 2, "n_head": 2, "seq_len": 32, "batch_size": 4}


@pytest.fixture(scope="module")
def job(tmp_path_factory):
    out = tmp_path_factory.mktemp("plan")
    args = ["--nproc", "2", "--profile", str(out / "prof"), "--profile-steps", "2:4", "examples/train_gpt.py",
            "--steps", "5", "--log-every", "5", "--ckpt-every", "0", "--ckpt-dir", str(out / "ckpt"), "--no-resume",
            "--sample-len", "0", "--max-bytes", "200000", "--eval-batches", "1"]
    for k, v in CFG.items():
        args += [f"--{k.replace('_', '-')}", str(v)]
    done = run_npurun(args, timeout=400, cwd=REPO)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    peak = re.findall(r"npu mem [\d.]+ MiB \(peak ([\d.]+)\)", done.stdout)
    assert peak, done.stdout[-2000:]
    return out / "prof", float(peak[-1]) * 2**20


def test_step_trace_round_trip(job, tmp_path):
    traces = st.load_dir(str(job[0]))
    assert sorted(traces) == [0, 1]
    t = traces[0]
    assert t["steps"] == [2, 3] and t["world_size"] == 2 and t["tokens_per_step"] == CFG["batch_size"] * CFG["seq_len"]
    kinds = Counter(o["kind"] for o in t["ops"])
    for k in ("kernel", "collective", "record", "wait_event", "wait_collective"):
        assert kinds[k] > 0, kinds
    mms = [o for o in t["ops"] if o["kind"] == "kernel" and o["name"] in ("aten::mm", "aten::addmm")]
    assert mms and all(o["flops"] > 0 and o["bytes_read"] > 0 and o["bytes_written"] > 0 for o in mms)
    mm = next(o for o in mms if o["name"] == "aten::mm")
    (m, k), (k2, n) = mm["inputs"][0]["shape"], mm["inputs"][1]["shape"]
    assert k == k2 and mm["flops"] == 2 * m * n * k and mm["outputs"][0]["shape"] == [m, n]
    # the flagship trains in bf16 by default (FSDP2 MixedPrecisionPolicy): its GEMMs are npu's half kernels,
    # which the step trace describes as the fallback's kernels
    assert mm["inputs"][0]["dtype"] == "bfloat16" and len(mm["inputs"][0]["stride"]) == 2
    st.save(t, str(tmp_path / "rank0.steptrace.json"))
    assert st.load_dir(str(tmp_path)) == {0: t}
    bad = dict(t, version="2.0")
    with pytest.raises(ValueError, match="version '2.0'"):
        st.validate(bad)


def _padded_bytes(params, world, itemsize):
    return sum(math.ceil(p.shape[0] / world) * world * (p.numel() // p.shape[0]) * itemsize for p in params)


def test_fsdp2_collectives_per_block(job):
    import torch

    sys.path.insert(0, os.path.join(REPO, "examples"))
    from train_gpt import GPT, GPTConfig

    with torch.device("meta"):
        model = GPT(GPTConfig(vocab_size=256, seq_len=CFG["seq_len"], d_model=CFG["d_model"], n_layer=CFG["n_layer"],
                              n_head=CFG["n_head"]))
    # the flagship's default MixedPrecisionPolicy: bf16 parameters all-gathered, fp32 gradients reduce-scattered
    in_blocks = {id(p) for b in model.blocks for p in b.parameters()}
    root_params = [p for p in model.parameters() if id(p) not in in_blocks]
    block, root = _padded_bytes(list(model.blocks[0].parameters()), 2, 2), _padded_bytes(root_params, 2, 2)
    block_rs, root_rs = _padded_bytes(list(model.blocks[0].parameters()), 2, 4), _padded_bytes(root_params, 2, 4)
    n = CFG["n_layer"]
    for t in st.load_dir(str(job[0])).values():
        for step in t["steps"]:
            colls = [o for o in t["ops"] if o["kind"] == "collective" and o["step"] == step]
            ag = Counter(o["out_bytes"] for o in colls if collective_kind(o["name"]) == "all_gather")
            rs = Counter(o["in_bytes"] for o in colls if collective_kind(o["name"]) == "reduce_scatter")
            # forward and backward all-gather of each block and of the root: the flagship passes
            # reshard_after_forward=True to every fully_shard call, the root's included
            assert ag == Counter({block: 2 * n, root: 2}), (ag, block, root)
            assert rs == Counter({block_rs: n, root_rs: 1}), (rs, block_rs, root_rs)
            assert all(o["group_ranks"] == [0, 1] for o in colls)


def test_predicted_peak_memory_matches_the_allocator(job):
    # the allocator's peak over the recorded steps (the job profiler restarts the statistics at step A)
    for rank, t in st.load_dir(str(job[0])).items():
        predicted = replay_memory(t).peak_bytes
        measured = t["memory"]["allocator_peak_allocated"]
        assert measured and abs(predicted - measured) <= 0.10 * measured, (rank, predicted, measured)
    # the flagship's own line reports rank 0's peak since then (its last --log-every line, after the traced steps)
    assert job[1] >= replay_memory(st.load_dir(str(job[0]))[0]).peak_bytes * 0.9


def test_predict_cli(job, tmp_path):
    out = tmp_path / "p.json"
    r = subprocess.run([sys.executable, "-m", "npudist.plan", "predict", str(job[0]), "--hardware", HW, "--json",
                        str(out), "--chrome", str(tmp_path / "t.json")], capture_output=True, text=True, cwd=REPO,
                       timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    p = json.loads(out.read_text())
    for key in ("step_time_s", "tokens_per_s_per_npu", "mfu", "peak_memory_gib", "fits", "columns"):
        assert key in p, key
    assert p["fits"] is True and p["step_time_s"] > 0 and 0 < p["mfu"] < 1 and p["tokens_per_s_per_npu"] > 0
    assert {c["Index"] for c in p["columns"]} == {0, 1}
    cols = p["columns"][0]
    assert cols["Computing"] > 0 and cols["Communication"] > 0
    assert json.loads((tmp_path / "t.json").read_text())["traceEvents"]
    # a device too small for the job: exit code 3 and the message
    small = tmp_path / "small.toml"
    small.write_text(open(HW).read().replace("capacity_gib = 1.0", "capacity_gib = 0.001"))
    r = subprocess.run([sys.executable, "-m", "npudist.plan", "predict", str(job[0]), "--hardware", str(small)],
                       capture_output=True, text=True, cwd=REPO, timeout=120)
    assert r.returncode == 3, r.stdout + r.stderr
    assert re.search(r"does not fit: rank \d needs [\d.]+ GiB in step \d, the device has 0.001 GiB; largest at the "
                     r"peak: ", r.stdout), r.stdout
