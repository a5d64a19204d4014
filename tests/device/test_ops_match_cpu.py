"""npu results equal cpu results over a sample of PyTorch's OpInfo database, forward and backward."""
import warnings
import zlib

import pytest
import torch

from npudist.testing.op_coverage import explain
from npudist.testing.opinfo import compare_op

warnings.filterwarnings("ignore")
from torch.testing._internal.common_methods_invocations import op_db  # noqa: E402  (after the warnings filter, which op_db's import triggers)

# Ops npu does not support by design (failures here are explained, not bugs).
UNSUPPORTED = {"to_sparse"}  # sparse layouts


def _sample(fraction):
    """A deterministic sample of op_db: every op whose name hashes into `fraction`."""
    return [op for op in op_db if zlib.crc32(f"{op.name}.{op.variant_test_name}".encode()) % 100 < fraction * 100]


DEFAULT_OPS = _sample(0.12)
DTYPES = [torch.float32, torch.int64, torch.bfloat16, torch.bool]


def _check(op, dtype):
    if dtype not in op.supported_dtypes("cpu"):
        pytest.skip(f"{op.name} does not support {dtype} on cpu")
    if op.name in UNSUPPORTED:
        pytest.skip(f"{op.name}: unsupported on npu by design")
    result = compare_op(op, dtype)
    if result.status == "skip":
        pytest.skip(result.reason)
    if result.status != "pass" and explain(result):
        pytest.skip(f"explained: {explain(result)}")
    assert result.status == "pass", f"{op.name}.{op.variant_test_name} {dtype}: {result.status}: {result.reason}"
    assert result.samples > 0


@pytest.mark.parametrize("dtype", [torch.float32, torch.int64], ids=str)
@pytest.mark.parametrize("op", DEFAULT_OPS, ids=lambda op: f"{op.name}.{op.variant_test_name}".rstrip("."))
def test_op_matches_cpu(op, dtype):
    _check(op, dtype)


@pytest.mark.slow
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("op", op_db, ids=lambda op: f"{op.name}.{op.variant_test_name}".rstrip("."))
def test_op_matches_cpu_full(op, dtype):
    _check(op, dtype)


def test_sample_is_large_enough():
    assert len(DEFAULT_OPS) >= 60


def test_coverage_report_sample_has_no_unexplained_failures():
    from npudist.testing import op_coverage

    report = op_coverage.run(fraction=0.04, max_samples=2, verbose=False)
    bad = [(r["name"], r["dtype"], r["reason"]) for r in report["results"]
           if r["status"] in ("fail", "error") and not r["explanation"]]
    assert report["counts"].get("pass", 0) > 100
    assert bad == []
