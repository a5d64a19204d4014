"""The "explained failure" rules of npudist.testing.op_coverage match the causes they name, not
every reason that happens to share a word with them."""
import types

from npudist.testing.op_coverage import explain


def _result(name, reason, dtype="float32", status="error"):
    return types.SimpleNamespace(name=name, dtype=dtype, reason=reason, status=status)


def test_sparse_rule_matches_npudists_error_only():
    real = ("NotImplementedError: aten::_to_sparse produced a Sparse tensor: npu supports only strided (dense) "
            "tensors; keep sparse work on cpu at <lambda>")
    assert explain(_result("to_sparse", real)).startswith("sparse layouts")
    csr = real.replace("a Sparse tensor", "a SparseCsr tensor")
    assert explain(_result("to_sparse_csr", csr)).startswith("sparse layouts")
    # a sparse-named op with wrong values, or an error that merely mentions sparse: not explained
    assert explain(_result("sparse.mm", "output 0 differs: max abs diff 0.5", status="fail")) == ""
    assert explain(_result("nn.functional.embedding", "RuntimeError: sparse gradient mismatch")) == ""
    assert explain(_result("masked.sum", "Sparse")) == ""


def test_other_rules_still_apply():
    assert explain(_result("nn.functional.layer_norm", "output 0 differs", dtype="bfloat16")).startswith(
        "low-precision rounding")
    assert explain(_result("nn.functional.layer_norm", "output 0 differs", dtype="float32")) == ""
