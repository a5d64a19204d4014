"""benchmarks/plan_validation.py's rows are well-formed and consistent (the planner's validation data).

The rows are transcribed from MindSpeed-LLM's README and example scripts at one commit; these checks catch a
transcription slip (a layout that could not have run, a count that contradicts its architecture) before any
prediction is compared with them. No torch, no build: the module is data.
"""

import importlib.util
import math
import os
import re

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _load():
    spec = importlib.util.spec_from_file_location(
        "plan_validation", os.path.join(REPO, "benchmarks", "plan_validation.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


V = _load()
ROWS = V.CALIBRATION_ROWS + V.CHECK_ROWS
ROW_KEYS = {"id", "model", "size", "seq_label", "impl", "cluster", "published_tokens_per_s_per_npu", "readme_line",
            "seq", "nodes", "npus_per_node", "reference_tokens_per_s_per_npu", "hidden", "layers", "heads",
            "kv_heads", "ffn", "vocab", "vocab_unpadded", "vocab_from", "tp", "pp", "vpp_layers", "num_layer_list", "dp", "mbs",
            "gbs", "sequence_parallel", "recompute", "distributed_optimizer", "flash_attention", "dtype", "flags",
            "deviations", "script"}
MINOR_DEVIATIONS = ("qkv_bias", "tied_embeddings", "alibi", "partial_rotary", "geglu", "embedding/residual",
                    "rmsnorm_offset", "input_embeds_norm")


def _ids(rows):
    return [r["id"] for r in rows]


@pytest.mark.parametrize("row", ROWS, ids=_ids(ROWS))
def test_row_layout_could_have_run(row):
    assert set(row) == ROW_KEYS
    npus = row["nodes"] * row["npus_per_node"]
    assert row["cluster"] == f"{row['nodes']}x{row['npus_per_node']}"
    assert row["tp"] * row["pp"] * row["dp"] == npus
    assert row["hidden"] % row["heads"] == 0, "head_dim = hidden / heads must be whole"
    assert row["heads"] % row["kv_heads"] == 0, "query heads must group evenly over kv heads"
    assert row["heads"] % row["tp"] == 0 and row["kv_heads"] % row["tp"] == 0, "TP splits heads and kv heads"
    assert row["ffn"] % row["tp"] == 0 and row["vocab"] % row["tp"] == 0
    assert row["layers"] % row["pp"] == 0, "Megatron gives every stage the same number of layers"
    if row["num_layer_list"] is not None:  # MindSpeed-LLM's uneven stages: one count per stage, no VPP
        assert len(row["num_layer_list"]) == row["pp"] and sum(row["num_layer_list"]) == row["layers"]
        assert row["vpp_layers"] is None
    if row["vpp_layers"] is not None:
        assert row["pp"] > 2 and (row["layers"] // row["pp"]) % row["vpp_layers"] == 0
    assert row["gbs"] % (row["mbs"] * row["dp"]) == 0, "gbs = mbs x dp x micro-batches"
    assert row["vocab"] >= row["vocab_unpadded"] and row["vocab"] - row["vocab_unpadded"] < 128 * row["tp"]
    assert row["dtype"] in ("bf16", "fp16")
    assert row["flash_attention"], "the family only has fused attention"


@pytest.mark.parametrize("row", ROWS, ids=_ids(ROWS))
def test_row_matches_its_labels_and_sources(row):
    assert row["seq"] == int(row["seq_label"].rstrip("K")) * 1024
    assert row["published_tokens_per_s_per_npu"] > 0
    assert row["impl"] in ("Mcore", "Legacy")
    assert row["script"].startswith("examples/") and row["script"].endswith(".sh")
    assert ("/mcore/" in row["script"]) == (row["impl"] == "Mcore")
    assert isinstance(row["readme_line"], int) and row["readme_line"] > 0
    assert row["vocab_from"] in ("script", "tokenizer")
    if row["vocab_from"] == "tokenizer":
        assert row["vocab_unpadded"] == V.TOKENIZER_VOCAB[row["model"]]["size"]
    for deviation in row["deviations"]:
        assert deviation.startswith(MINOR_DEVIATIONS), deviation
    if row["recompute"] is not None:
        assert set(row["recompute"]) == {"granularity", "method", "num_layers"}


def test_calibration_rows_are_the_issues():
    """The two calibration rows: LLaMA2-7B TP1 PP2 seq 4096 mbs 1 gbs 256 with the distributed optimizer, 4733;
    LLaMA2-13B TP8 PP1 seq 4096 mbs 4 gbs 512, 2209; both on one node of 8."""
    seven, thirteen = V.CALIBRATION_ROWS
    assert (seven["model"], seven["size"], seven["nodes"], seven["tp"], seven["pp"], seven["seq"], seven["mbs"],
            seven["gbs"], seven["distributed_optimizer"], seven["published_tokens_per_s_per_npu"]) == (
        "LLaMA2", "7B", 1, 1, 2, 4096, 1, 256, True, 4733)
    assert (thirteen["model"], thirteen["size"], thirteen["nodes"], thirteen["tp"], thirteen["pp"], thirteen["seq"],
            thirteen["mbs"], thirteen["gbs"], thirteen["published_tokens_per_s_per_npu"]) == (
        "LLaMA2", "13B", 1, 8, 1, 4096, 4, 512, 2209)
    assert not set(_ids(V.CALIBRATION_ROWS)) & set(_ids(V.CHECK_ROWS)), "check rows are out of sample"


def test_every_readme_row_is_accounted_for_once():
    everything = ROWS + V.LEFT_OUT
    ids = _ids(everything)
    assert len(ids) == len(set(ids))
    assert len(everything) == 76, "the 性能 table at the commit has 76 rows"
    lines = [r["readme_line"] for r in everything]
    assert len(lines) == len(set(lines)), "one README row each"
    for rows in (V.CHECK_ROWS, V.LEFT_OUT):
        assert [r["readme_line"] for r in rows] == sorted(r["readme_line"] for r in rows), "in table order"
    for row in V.LEFT_OUT:
        assert row["reason"] and set(row) >= {"id", "model", "size", "cluster", "published_tokens_per_s_per_npu",
                                              "script", "reason", "readme_line"}
        if row["reason"].startswith("MoE"):
            continue
        assert row["script"] is None or row["script"].endswith(".sh")


@pytest.mark.parametrize("row", V.PARAMETER_COUNTS, ids=[r["model"] for r in V.PARAMETER_COUNTS])
def test_parameter_counts_follow_from_their_architecture(row):
    """A LLaMA block has q and o (h x h), k and v (h x kv_heads x head_dim), the SwiGLU MLP (3 x h x ffn)
    and two RMSNorm weights; plus embedding and output (untied) and the final norm."""
    h, head_dim = row["hidden"], row["hidden"] // row["heads"]
    block = 2 * h * h + 2 * h * row["kv_heads"] * head_dim + 3 * h * row["ffn"] + 2 * h
    embeddings = row["vocab"] * h * (1 if row["tied_embeddings"] else 2)
    total = row["layers"] * block + embeddings + h
    assert total == row["published_params"]
    assert math.isclose(total / 1e9, float(row["nominal"].rstrip("B")), rel_tol=0.05)


def test_collective_rows_cover_two_four_eight_npus():
    by_source = {}
    for row in V.COLLECTIVE_ROWS:
        assert row["algbw_gbps"] > 0 and re.fullmatch(r"[0-9a-f]{40}", row["commit"])
        by_source.setdefault((row["source"], row["op"]), set()).add(row["npus"])
    assert by_source and all(npus == {2, 4, 8} for npus in by_source.values())


def test_list_prints_every_table(capsys, tmp_path):
    out = tmp_path / "rows.json"
    assert V.main(["--list", "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    for row in ROWS + V.LEFT_OUT:
        assert row["id"] in printed
    assert out.exists() and '"check_rows"' in out.read_text()
