"""The DTensor op sweep (op_db on DTensors over an npu mesh and a cpu mesh in the same processes):
npu passes everything cpu passes, apart from the explained npu-only failures (npudist.testing.dtensor_coverage)."""
import json
import subprocess
import sys

import pytest

from npudist.testing.dtensor_coverage import KNOWN_NPU_ONLY, render, unexplained_npu_only
from npudist.testing.dtensor_sweep import run_sweep
from npudist.testing.multiproc import REPO, clean_env

# A fixed sample covering pointwise, reductions, views, matmul, norms, indexing, random and
# no-strategy ops (the last must fail the same way on both meshes).
SAMPLE = ["add", "mul", "sum", "mean", "softmax", "view", "reshape", "transpose", "cat", "split", "matmul", "mm",
          "addmm", "nn.functional.linear", "nn.functional.layer_norm", "nn.functional.gelu",
          "nn.functional.embedding", "index_select", "gather", "topk", "nn.functional.dropout", "scatter_reduce",
          "polar", "native_batch_norm"]


@pytest.mark.timeout(900)
def test_sweep_sample_npu_matches_cpu():
    report = run_sweep(ops=SAMPLE, world_size=2, max_samples=2, max_combos=4, timeout=800)
    print(render(report))
    names = {e["name"] for e in report["results"]}
    assert {"add", "matmul", "native_batch_norm", "scatter_reduce"} <= names
    assert report["counts"]["npu"]["pass"] >= 18, report["counts"]
    assert not unexplained_npu_only(report), [(e["name"], e["npu"]) for e in unexplained_npu_only(report)]
    by_name = {e["name"]: e for e in report["results"]}
    # an op DTensor has no strategy for fails on both meshes, with DTensor's own message
    assert "sharding strategy" in by_name["polar"]["npu"]["reason"] and by_name["polar"]["cpu"]["status"] == "error"
    assert report["runs"]["npu"] > 40


@pytest.mark.slow
@pytest.mark.timeout(7200)
def test_full_sweep_npu_passes_everything_cpu_passes(tmp_path):
    out = tmp_path / "cov.json"
    proc = subprocess.run([sys.executable, "-m", "npudist.testing.dtensor_coverage", "--json", str(out)],
                          capture_output=True, text=True, timeout=7000, env=clean_env(), cwd=REPO)
    print(proc.stdout[-6000:])
    report = json.loads(out.read_text())
    assert len(report["results"]) > 600
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    assert not unexplained_npu_only(report)
    assert all(report["fused_ops"].values())


def test_known_npu_only_failures_have_reasons():
    assert KNOWN_NPU_ONLY and all(len(reason) > 40 for reason in KNOWN_NPU_ONLY.values())
