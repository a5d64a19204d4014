"""Bad input to the planner ends in a clear error naming what was wrong, never a traceback from deep inside or a
silently wrong number (docs/plan.md, "Errors"). In-process: every case fails before any capture runs."""
import copy
import os

import pytest
import tomllib

from npudist.plan import hardware
from npudist.plan.__main__ import main
from npudist.plan.cost import collective_time
from npudist.plan.llama import LlamaConfig
from npudist.plan.model import Layout, predict_model
from npudist.plan.sweep import candidates

HERE = os.path.dirname(os.path.abspath(__file__))
L7 = ["--family", "llama", "--hidden", "4096", "--layers", "32", "--heads", "32", "--ffn", "11008", "--vocab",
      "32000", "--seq", "4096"]
CFG = LlamaConfig(hidden=4096, layers=32, heads=32, kv_heads=32, ffn=11008, vocab=32000, seq=4096)


@pytest.fixture(scope="module")
def a2():
    return hardware.load("atlas800t-a2")


@pytest.mark.parametrize(("lay", "nodes", "msg"), [
    (Layout(1, 2, 4, 0, 256), 1, "--mbs 0: give a positive integer"),  # was ZeroDivisionError
    (Layout(1, 2, 4, -1, 256), 1, "--mbs -1: give a positive integer"),  # was a RuntimeError from the capture
    (Layout(1, 2, 4, 1, 0), 1, "--gbs 0: give a positive integer"),  # was a 0-token step
    (Layout(1, 2, 4, 1, -8), 1, "--gbs -8: give a positive integer"),  # was a negative step time
    (Layout(1, 2, 4, 1, 256), 0, "--nodes 0: give a positive integer"),
    (Layout(1, 2, -4, 1, 256), 1, "--dp -4: give a positive integer"),
])
def test_model_layout_sizes_must_be_positive(a2, lay, nodes, msg):
    with pytest.raises(ValueError, match=msg):
        predict_model(CFG, lay, a2, nodes)


def test_model_sequence_parallel_needs_seq_divisible_by_tp(a2):
    cfg = LlamaConfig(hidden=4096, layers=32, heads=32, kv_heads=32, ffn=11008, vocab=32000, seq=4100)
    # was silently captured with seq // tp tokens per rank (4096 of the 4100)
    with pytest.raises(ValueError, match="--seq 4100 is not divisible by --tp 8: --sequence-parallel"):
        predict_model(cfg, Layout(8, 1, 1, 1, 64, sequence_parallel=True), a2, 1)


def test_sweep_turns_sequence_parallel_off_where_seq_does_not_divide():
    cfg = LlamaConfig(hidden=4096, layers=32, heads=32, kv_heads=32, ffn=11008, vocab=32000, seq=4100)
    lays = candidates(cfg, 8, 8, 64, tps=[1, 2, 8], pps=[1], mbss=[1], recomputes=("none",), vpp=False)
    assert {(x.tp, x.sequence_parallel) for x in lays} == {(1, False), (2, True), (8, False)}


def test_model_kv_heads_zero_is_an_error_not_the_heads(capsys):
    # `--kv-heads 0` was read as "not given" and became --heads (multi-head attention) silently
    assert main(["model", *L7, "--kv-heads", "0", "--tp", "1", "--pp", "2", "--dp", "4", "--mbs", "1", "--gbs",
                 "256", "--hardware", "atlas800t-a2", "--nodes", "1"]) == 2
    assert "--kv-heads = 0: give a positive integer" in capsys.readouterr().err


@pytest.mark.parametrize(("flags", "msg"), [
    (["--tp", "0"], "--tp '0': give comma-separated positive integers"),  # was ZeroDivisionError
    (["--mbs", "0"], "--mbs '0': give comma-separated positive integers"),  # was ZeroDivisionError
    (["--pp", "2,x"], "--pp '2,x': give comma-separated positive integers"),  # was int()'s message
    (["--recompute", "none,bogus"], "--recompute 'none,bogus': comma-separated modes among none, selective, full"),
    (["--top", "0"], "--top 0: give a positive number of rows"),  # was every row
    (["--nodes", "0"], "--nodes 0: give a positive integer"),
])
def test_sweep_bad_flags(capsys, flags, msg):
    args = ["sweep", *L7, "--gbs", "256", "--hardware", "atlas800t-a2", "--nodes", "1"]
    for i in range(0, len(flags), 2):  # a later flag overrides the default's
        args += flags[i:i + 2]
    assert main(args) == 2
    assert msg in capsys.readouterr().err


def _doc():
    with open(os.path.join(hardware.SHIPPED_DIR, "atlas800t-a2-910b2.toml"), "rb") as f:
        return tomllib.load(f)


def _set(doc, path, value):
    d = doc
    *head, last = path.split(".")
    for k in head:
        d = d[k]
    d[last] = value
    return doc


@pytest.mark.parametrize(("path", "value", "msg"), [
    ("node.devices", 0, r"\[node\] devices = 0: give a positive integer"),  # was npus = 0 further on
    ("node.compute_resources", -1, r"\[node\] compute_resources = -1: give a positive integer"),
    ("compute.cores", 0, r"\[compute\] cores = 0: give a positive integer"),
    ("intra_node.links_per_device", 0, r"\[intra_node\] links_per_device = 0"),  # was ZeroDivisionError
    ("compute.launch_us", -3.0, r"\[compute\] launch_us is negative"),  # were negative kernel times
    ("compute.host_us", -1.0, r"\[compute\] host_us is negative"),
    ("memory.host_link_gbps", -5.0, r"\[memory\] host_link_gbps is negative"),
    ("inter_node.nic_gbps", -1.0, r"\[inter_node\] nic_gbps is negative"),
    ("inter_node.latency_us", -60.0, r"\[inter_node\] latency_us is negative"),
    ("intra_node.latency_us.default", -20.0, r"\[intra_node.latency_us\] default = -20.0: give a number"),
    ("intra_node.latency_us.all_reduce", "fast", r"\[intra_node.latency_us\] all_reduce = 'fast'"),  # float()'s
    ("compute.efficiency", True, r"\[compute\] efficiency = True is not a number"),  # was 1.0
    ("node.devices", "8", r"\[node\] devices = '8' is not an integer"),
    ("compute.peak_tflops.bfloat16", True, r"\[compute\] peak_tflops.bfloat16 = True: give a positive number"),
    ("node", 8, r"'node' must be a table"),  # was AttributeError: 'int' object has no attribute 'get'
    ("inter_node", "roce", r"'inter_node' must be a table"),
])
def test_hardware_bad_values_name_the_key(path, value, msg):
    doc = _set(copy.deepcopy(_doc()), path, value)
    with pytest.raises(ValueError, match=r"my\.toml: " + msg):
        hardware.parse(doc, "my.toml")


def test_hardware_without_inter_node_fails_for_a_group_over_nodes():
    doc = _doc()
    del doc["inter_node"]
    hw = hardware.parse(doc, "my.toml")  # fine for one node
    assert collective_time(hw, "all_reduce", 1 << 20, list(range(8))) > 0
    # a p2p across nodes was priced at 1 B/s (days for an activation); other collectives silently at the link's rate
    with pytest.raises(ValueError, match=r"my\.toml: \[inter_node\] needs nic_gbps > 0: this send spans 2"):
        collective_time(hw, "send", 1 << 20, [0, 8])
    with pytest.raises(ValueError, match="this all_reduce spans 2 nodes"):
        collective_time(hw, "all_reduce", 1 << 20, list(range(16)))


def test_capture_ranks_that_are_not_numbers(capsys, monkeypatch):
    monkeypatch.setenv("NPUDIST_DEVICE_COUNT", "8")  # main() sets it for a capture; restored after the test
    # was int()'s "invalid literal for int() with base 10: 'x'", naming no flag
    assert main(["capture", "--hardware", "atlas800t-a2", "--nnodes", "1", "--ranks", "x", "train.py"]) == 2
    assert "--ranks x: give ranks of the job (0..7), comma-separated" in capsys.readouterr().err


def test_predict_devices_per_node_must_be_positive(capsys, tmp_path):
    # 0 fell back to the hardware's devices per node silently; negative numbers gave nonsense node numbers
    assert main(["predict", str(tmp_path), "--hardware", "atlas800t-a2", "--devices-per-node", "0"]) == 2
    assert "--devices-per-node 0: give a positive integer" in capsys.readouterr().err


@pytest.mark.timeout(300)
@pytest.mark.parametrize("exc", ["ValueError", "RuntimeError"])
def test_capture_a_script_that_raises(tmp_path, exc):
    # a script's own ValueError was printed as the planner's error ("npudist.plan capture: error: bad path", no line),
    # its RuntimeError ended in a traceback and exit code 1
    from npudist.testing.multiproc import run_python

    script = tmp_path / "train.py"
    script.write_text(f"import os\n\nraise {exc}('no such data: ' + os.environ['RANK'])\n")
    r = run_python(["-m", "npudist.plan", "capture", "--hardware", "atlas800t-a2", "--nnodes", "1", "--out",
                    str(tmp_path / "cap"), str(script)], timeout=240)
    assert r.returncode == 2, r.stderr[-3000:]
    assert f"train.py:3 raised {exc}: no such data: 0 (the script's traceback is above)" in r.stderr, r.stderr[-3000:]


def test_sweep_lists_the_layouts_that_fit_first():
    from npudist.plan.sweep import rank_rows

    rows = [dict(tokens_per_s_per_npu=5066, fits=False), dict(tokens_per_s_per_npu=4637, fits=True),
            dict(tokens_per_s_per_npu=4813, fits=True), dict(tokens_per_s_per_npu=4993, fits=False)]
    # was fastest first regardless: `sweep --top 4` of LLaMA2-7B on 16 NPUs showed four layouts that do not fit
    assert [(r["fits"], r["tokens_per_s_per_npu"]) for r in rank_rows(rows)] == [
        (True, 4813), (True, 4637), (False, 5066), (False, 4993)]


def test_capture_more_ranks_per_node_than_devices(capsys, monkeypatch):
    monkeypatch.setenv("NPUDIST_DEVICE_COUNT", "8")
    # 16 ranks per node on 8-NPU nodes was predicted as two ranks sharing each NPU's compute, silently
    assert main(["capture", "--hardware", "atlas800t-a2", "--nnodes", "1", "--nproc-per-node", "16", "train.py"]) == 2
    assert "--nproc-per-node 16 is more than the 8 devices per node of atlas800t-a2-910b2" in capsys.readouterr().err
    assert main(["predict", "x", "--hardware", "atlas800t-a2", "--devices-per-node", "16"]) == 2
    assert "--devices-per-node 16 is more than the 8 devices per node" in capsys.readouterr().err


@pytest.mark.parametrize(("flags", "msg"), [
    (["--tokens", "-512"], "--tokens -512: give this rank's tokens per step"),  # was a negative tokens/s
    (["--tokens", "0"], "--tokens 0: give this rank's tokens per step"),  # was read as "not given"
    (["--warmup-steps", "-1"], "--warmup-steps -1: give 0 or more"),  # the message named no flag ("warmup steps -1")
])
def test_capture_bad_counts(capsys, monkeypatch, flags, msg):
    monkeypatch.setenv("NPUDIST_DEVICE_COUNT", "8")
    assert main(["capture", "--hardware", "atlas800t-a2", "--nnodes", "1", *flags, "train.py"]) == 2
    assert msg in capsys.readouterr().err
