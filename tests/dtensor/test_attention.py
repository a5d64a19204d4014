"""scaled_dot_product_attention on npu meshes: DTensor with is_causal (the mixed Tensor/DTensor reproduction),
context_parallel ring attention on 2 and 4 ranks, FSDP2 x TP training (workers/attention.py)."""
import pytest

from . import run_worker


@pytest.mark.timeout(400)
def test_dtensor_causal_and_context_parallel_2_ranks():
    run_worker("attention.py", 2)


@pytest.mark.timeout(600)
def test_dtensor_causal_context_parallel_and_fsdp_tp_4_ranks():
    run_worker("attention.py", 4, timeout=500)
