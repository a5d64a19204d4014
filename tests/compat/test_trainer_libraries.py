"""DeepSpeed and Accelerate, unchanged, on npudist: full tier only (``--full``).

They are test dependencies of this tier, installed by the test set-up (pyproject.toml's ``full``
extra; DeepSpeed is a source package: ``pip install --no-build-isolation deepspeed==0.19.8`` with
torch==2.13.0 already installed, so pip never resolves torch). A missing one fails with that
command instead of skipping.
"""
import importlib.util
import os
import shutil
import subprocess
import sys

import pytest

from npudist.testing.multiproc import clean_env

from ._ranks import npurun

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]
INSTALL = ("pip install --no-build-isolation --no-deps deepspeed==0.19.8 accelerate==1.15.0 and their "
           "dependencies: pip install -e '.[full]' --no-build-isolation (pyproject.toml, optional-dependencies 'full')")


def _require(module):
    if importlib.util.find_spec(module) is None:
        pytest.fail(f"{module} is not installed: the full tier needs it; {INSTALL}")


def test_deepspeed_zero3_bf16_with_its_default_npu_optimizer(tmp_path):
    _require("deepspeed")
    _, results = npurun("ds_zero3.py", nproc=2, timeout=800)
    r0, r1 = results[0][-1], results[1][-1]
    for rank, r in enumerate((r0, r1)):
        assert r["accelerator"] == "npu" and r["device"] == f"npu:{rank}", r
        assert r["optimizer"] == "DeepSpeedZeroOptimizer_Stage3" and r["inner"] == "FusedAdam", r
        assert r["ascend_home"].endswith(os.path.join("npudist", "cann_home")) and r["cann"] == "8.3.RC1", r
        losses = r["losses"]
        assert all(l == l for l in losses) and losses[-1] < 0.7 * losses[0], losses  # noqa: E741  (finite, falling)
        # Lion: w - lr * sign(update), update = (1 - beta1) * grad for a first step from zero momentum
        assert all(abs(v - 0.9) < 1e-6 for v in r["lion"]), r["lion"]
    assert r0["checksum"] == r1["checksum"], (r0["checksum"], r1["checksum"])  # one model, gathered on both ranks
    env = clean_env()
    rep = subprocess.run([shutil.which("ds_report") or os.path.join(os.path.dirname(sys.executable), "ds_report")],
                         env=env, capture_output=True, text=True, timeout=600, cwd=str(tmp_path))
    assert rep.returncode == 0, rep.stderr[-3000:]
    assert "ascend_cann version .............. 8.3.RC1" in rep.stdout, rep.stdout[-3000:]


def test_accelerate_multi_npu_fsdp2():
    _require("accelerate")
    _, results = npurun("accelerate_fsdp2.py", nproc=2, timeout=600)
    for rank in (0, 1):
        r = results[rank][-1]
        assert r["detected"] == "DistributedType.MULTI_NPU" and r["backend"] == "hccl", r
        assert r["type"] == "DistributedType.FSDP" and r["fsdp_version"] == 2, r
        assert r["device"] == f"npu:{rank}" and r["dtensor"] and r["param_device"] == f"npu:{rank}", r
        assert r["losses"][-1] < 0.5 * r["losses"][0], r["losses"]


def test_accelerate_env_reports_the_npu_and_cann(tmp_path):
    _require("accelerate")
    exe = shutil.which("accelerate") or os.path.join(os.path.dirname(sys.executable), "accelerate")
    r = subprocess.run([exe, "env"], env=clean_env(), capture_output=True, text=True, timeout=300, cwd=str(tmp_path))
    assert r.returncode == 0, r.stderr[-3000:]
    assert "- PyTorch accelerator: NPU" in r.stdout and "- CANN version: 8.3.RC1" in r.stdout, r.stdout
