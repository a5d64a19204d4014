"""benchmarks/plan_validation.py --predict with the shipped Atlas 800T A2 file: the file's two factors are the
ones calibrated on the two calibration rows (so those rows come out at their published figures), and the
check rows keep the accuracy docs/plan.md reports (a change to the model that moves them shows up here and
in the docs' figures, which must then be re-run)."""
import json
import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.timeout(400)
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture(scope="module")
def result(tmp_path_factory):
    out = tmp_path_factory.mktemp("val") / "v.json"
    env = dict(os.environ, PYTHONPATH=REPO, NPUDIST_DEVICE_COUNT="1")
    r = subprocess.run([sys.executable, os.path.join(REPO, "benchmarks", "plan_validation.py"), "--predict",
                        "--no-calibrate", "--out", str(out)], capture_output=True, text=True, timeout=360, env=env,
                       cwd=REPO)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-3000:]
    return json.loads(out.read_text())


def test_shipped_factors_reproduce_the_calibration_rows(result):
    for row in result["calibration_rows"]:
        assert row["ratio"] == pytest.approx(1.0, abs=0.005), row


def test_check_rows_as_documented(result):
    check = result["check"]
    assert len(check["rows"]) == 45
    assert check["mape"] == pytest.approx(0.147, abs=0.0051)
    assert check["spearman"] > 0.99
    # every peak fits since the stages take their scripts' --num-layer-list (before: 43 of 45)
    assert sum(r["fits_64_gib"] for r in check["rows"]) == 45


def test_collectives_as_documented(result):
    ratios = {(c["source"], c["op"], c["npus"]): c["ratio"] for c in result["collectives"]}
    assert sum(abs(r - 1) <= 0.10 + 1e-9 for r in ratios.values()) == 10
    # the full mesh: all_gather algbw = n links x 19.65 GB/s (less latency) against MindSpeed's 8-NPU 147 GiB/s
    assert ratios[("mindspeed_simulation_a2", "all_gather", 8)] == pytest.approx(0.993, abs=0.005)
    # all_to_all: the mesh plus HCCL's staging copy of the send buffer (docs/plan.md)
    assert ratios[("mindspeed_simulation_a2", "all_to_all", 8)] == pytest.approx(1.026, abs=0.005)


def test_spearman():
    sys.path.insert(0, os.path.join(REPO, "benchmarks"))
    try:
        import _plan_validate as pv
    finally:
        sys.path.pop(0)
    assert pv.spearman([1, 2, 3, 4], [10, 20, 30, 40]) == pytest.approx(1.0)
    assert pv.spearman([1, 2, 3, 4], [40, 30, 20, 10]) == pytest.approx(-1.0)
    assert pv.spearman([1, 2, 2, 3], [1, 3, 2, 4]) == pytest.approx(0.9486832980505138)
