"""``python -m npudist.plan model`` / ``sweep`` and the LLaMA family: parameter counts equal the published
ones, the captured layer does the work its shapes imply, the JSON keys other tools read, and oversized
layouts are reported as not fitting."""
import importlib.util
import json
import os
import subprocess
import sys

import pytest

from npudist.plan.llama import LlamaConfig, check_layout, full_model_parameters

pytestmark = pytest.mark.timeout(300)
HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
_spec = importlib.util.spec_from_file_location("plan_validation", os.path.join(REPO, "benchmarks", "plan_validation.py"))
V = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(V)
LLAMA2_70B = ["--family", "llama", "--hidden", "8192", "--layers", "80", "--heads", "64", "--kv-heads", "8",
              "--ffn", "28672", "--vocab", "32000", "--seq", "4096"]
SMALL = ["--family", "llama", "--hidden", "1024", "--layers", "8", "--heads", "16", "--kv-heads", "4", "--ffn",
         "2816", "--vocab", "32000", "--seq", "2048"]


def _run(*args):
    env = dict(os.environ, PYTHONPATH=REPO, NPUDIST_DEVICE_COUNT="1")
    return subprocess.run([sys.executable, "-m", "npudist.plan", *args], capture_output=True, text=True, timeout=240,
                          env=env, cwd=REPO)


@pytest.mark.parametrize("row", V.PARAMETER_COUNTS, ids=[r["model"] for r in V.PARAMETER_COUNTS])
def test_parameter_counts_equal_the_published(row):
    cfg = LlamaConfig(hidden=row["hidden"], layers=row["layers"], heads=row["heads"], kv_heads=row["kv_heads"],
                      ffn=row["ffn"], vocab=row["vocab"], seq=4096)
    built = full_model_parameters(cfg)  # the modules built on meta, counted
    assert built == cfg.parameters()
    assert abs(built - row["published_params"]) / row["published_params"] < 0.01
    assert built == row["published_params"]  # exact, in fact


def test_layout_errors_name_the_flag():
    cfg = LlamaConfig(hidden=1024, layers=8, heads=16, kv_heads=4, ffn=2816, vocab=32000, seq=2048)
    with pytest.raises(ValueError, match="--kv-heads 4 is not divisible by --tp 8"):
        check_layout(cfg, 8, 1, None)
    with pytest.raises(ValueError, match="--layers 8 is not divisible by --pp 3"):
        check_layout(cfg, 1, 3, None)
    with pytest.raises(ValueError, match="--vpp-layers 3"):
        check_layout(cfg, 1, 4, 3)
    r = _run("model", *SMALL, "--tp", "2", "--pp", "2", "--dp", "1", "--mbs", "1", "--gbs", "8", "--hardware",
             "atlas800t-a2", "--nodes", "1")
    assert r.returncode == 2 and "2 x --pp 2 x --dp 1 = 4 NPUs, but --nodes 1" in r.stderr, r.stderr[-2000:]


def test_model_json_keys_and_the_capture(tmp_path):
    out = tmp_path / "m.json"
    r = _run("model", *SMALL, "--tp", "2", "--pp", "2", "--dp", "2", "--mbs", "2", "--gbs", "16",
             "--sequence-parallel", "--distributed-optimizer", "--hardware", "atlas800t-a2", "--nodes", "1",
             "--json", str(out))
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-3000:]
    j = json.loads(out.read_text())
    for key in ("tokens_per_s_per_npu", "step_time_s", "peak_memory_gib", "mfu", "fits"):
        assert key in j
    assert j["fits"] is True and 0 < j["mfu"] < 1 and j["step_time_s"] > 0
    assert j["tokens_per_s_per_npu"] == pytest.approx(16 * 2048 / j["step_time_s"] / 8)
    # the captured layer: forward GEMM FLOPs on this TP rank = 2 x tokens x the layer's sharded weights, plus
    # causal attention's (4 b n s^2 d (s+1)/(2s) with this rank's 8 of 16 heads)
    layer = j["pieces"]["layer"]
    tokens, h, kv, ffn = 2 * 2048, 1024, 4 * 64, 2816
    gemm = 2 * tokens * (h * h + 2 * h * kv + h * h + 3 * h * ffn) // 2
    attn = 4 * 2 * 8 * 2048 * 2048 * 64 * 2049 // (2 * 2048)
    assert layer["fwd_flops"] == gemm + attn
    assert layer["params"] == (cfg_layer := (2 * h * h + 2 * h * kv + 3 * h * ffn)) // 2 + 2 * h and cfg_layer
    assert layer["fwd_tp_comm_s"] > 0 and layer["bwd_s"] > layer["fwd_s"]
    # stage memory: the first stage holds pp = 2 micro-batches in flight (1F1B)
    assert j["memory_per_stage"][0]["microbatches_in_flight"] == 2


def test_an_oversized_layout_does_not_fit(tmp_path):
    # LLaMA2-70B with no model parallelism at all: ~69 B parameters x 18 B per rank
    out = tmp_path / "m.json"
    r = _run("model", *LLAMA2_70B, "--tp", "1", "--pp", "1", "--dp", "8", "--mbs", "1", "--gbs", "64", "--hardware",
             "atlas800t-a2", "--nodes", "1", "--json", str(out))
    assert r.returncode == 3, r.stdout[-2000:] + r.stderr[-3000:]
    j = json.loads(out.read_text())
    assert j["fits"] is False and j["peak_memory_gib"] > 64 and "does not fit" in r.stdout


def test_sweep_marks_an_oversized_layout(tmp_path):
    out = tmp_path / "s.json"
    r = _run("sweep", *LLAMA2_70B, "--gbs", "64", "--tp", "1,8", "--pp", "1,8", "--mbs", "1", "--recompute", "none",
             "--no-vpp", "--hardware", "atlas800t-a2", "--nodes", "1", "--json", str(out))
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-3000:]
    rows = json.loads(out.read_text())
    layouts = {(x["tp"], x["pp"]): x for x in rows}
    assert set(layouts) == {(1, 1), (1, 8), (8, 1)}  # tp 8 x pp 8 needs 64 NPUs
    assert layouts[(1, 1)]["fits"] is False and "DOES NOT FIT" in r.stdout
    assert [x["fits"] for x in rows] == sorted((x["fits"] for x in rows), reverse=True)  # those that fit first
    for fits in (True, False):
        speeds = [x["tokens_per_s_per_npu"] for x in rows if x["fits"] is fits]
        assert speeds == sorted(speeds, reverse=True)


def test_full_recompute_trades_memory_for_time(tmp_path):
    layers = {}
    for rc in ("none", "full"):
        out = tmp_path / f"{rc}.json"
        r = _run("model", *SMALL, "--tp", "2", "--pp", "1", "--dp", "4", "--mbs", "1", "--gbs", "8",
                 "--sequence-parallel", "--recompute", rc, "--hardware", "atlas800t-a2", "--nodes", "1",
                 "--json", str(out))
        assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-3000:]
        layers[rc] = json.loads(out.read_text())["pieces"]["layer"]
    none, full = layers["none"], layers["full"]
    # a checkpointed layer keeps only its output shard (the next layer's saved input; its own input counts as
    # the previous layer's): s/tp x b x h x 2 B
    assert full["act_bytes"] == (2048 // 2) * 1 * 1024 * 2
    assert none["act_bytes"] > 5 * full["act_bytes"]
    # the backward runs the forward again (its all-gathers too, which the plain backward also redoes)
    assert full["fwd_flops"] == none["fwd_flops"] and full["bwd_s"] > none["bwd_s"] + 0.25 * none["fwd_s"]


def test_num_layer_list_rules():
    """MindSpeed-LLM's --num-layer-list: one count per stage summing to --layers, PP >= 2, no VPP."""
    cfg = LlamaConfig(hidden=256, layers=6, heads=4, kv_heads=4, ffn=512, vocab=1024, seq=64)
    check_layout(cfg, 1, 2, None, (2, 4))
    with pytest.raises(ValueError, match="--num-layer-list 2,3: positive entries summing to --layers 6"):
        check_layout(cfg, 1, 2, None, (2, 3))
    with pytest.raises(ValueError, match="one entry per pipeline stage"):
        check_layout(cfg, 1, 3, None, (2, 4))
    with pytest.raises(ValueError, match="cannot be combined"):
        check_layout(cfg, 1, 2, 1, (2, 4))
    check_layout(cfg, 1, 4, None, (1, 1, 2, 2))  # uneven stages allow pp that does not divide the layers


def test_num_layer_list_sets_each_stage(tmp_path):
    """Uneven stages (--num-layer-list 2,6): the stage with 3x the layers takes ~3x the layers' time, and the
    first stage's activations are its 2 layers x 2 micro-batches in flight against the last's 6 x 1."""
    out = tmp_path / "m.json"
    r = _run("model", *SMALL, "--tp", "1", "--pp", "2", "--dp", "4", "--mbs", "1", "--gbs", "16",
             "--num-layer-list", "2,6", "--hardware", "atlas800t-a2", "--nodes", "1", "--json", str(out))
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-3000:]
    j = json.loads(out.read_text())
    assert j["layout"]["num_layer_list"] == [2, 6]
    layer = j["pieces"]["layer"]
    s0, s1 = j["stages"]
    assert s0["fwd_s"] == pytest.approx(2 * layer["fwd_s"] + j["pieces"]["embedding"]["fwd_s"])
    assert s1["fwd_s"] == pytest.approx(6 * layer["fwd_s"] + j["pieces"]["head"]["fwd_s"])
    m0, m1 = j["memory_per_stage"]
    gib = 1024 ** 3
    assert m0["activations_gib"] * gib == pytest.approx(2 * 2 * layer["act_bytes"] + 2 * j["pieces"]["embedding"]["act_bytes"])
    assert m1["activations_gib"] * gib == pytest.approx(6 * layer["act_bytes"] + j["pieces"]["head"]["act_bytes"])
    bad = _run("model", *SMALL, "--tp", "1", "--pp", "2", "--dp", "4", "--mbs", "1", "--gbs", "16",
               "--num-layer-list", "2,5", "--hardware", "atlas800t-a2", "--nodes", "1")
    assert bad.returncode == 2 and "--num-layer-list 2,5" in bad.stdout + bad.stderr
