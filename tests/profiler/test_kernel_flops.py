"""A profiled step's trace (step trace on) describes npu kernels with their arguments, so the planner's
step trace gives them FLOPs: SDPA's efficient-attention kernels (forward and backward) as well as the
fallback's and the half GEMM's (one description helper, csrc/profiler/kernel_scope.h)."""
import json

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.profiler import ProfilerActivity, profile
from torch.utils.flop_counter import FlopCounterMode

from npudist import _C
from npudist.profiler.step_trace import from_chrome_trace


def _step_trace_of(fn, tmp_path):
    path = tmp_path / "trace.json"
    _C._profiler_set_step_trace(True)
    try:
        with (profile(activities=[ProfilerActivity.CPU, ProfilerActivity.PrivateUse1], profile_memory=True) as prof,
              torch.profiler.record_function("ProfilerStep#1")):
            fn()
        prof.export_chrome_trace(str(path))
    finally:
        _C._profiler_set_step_trace(False)
    return from_chrome_trace(json.loads(path.read_text()), rank=0, world_size=1)


def test_profiled_sdpa_step_lists_efficient_attention_kernels_with_flops(tmp_path):
    b, h, seq, d = 1, 2, 128, 64
    q, k, v = (torch.randn(b, h, seq, d).to("npu", torch.bfloat16).requires_grad_(True) for _ in range(3))
    x, w = torch.randn(64, 64).npu(), torch.randn(64, 64).to("npu", torch.bfloat16)

    def step():
        with sdpa_kernel([SDPBackend.EFFICIENT_ATTENTION]):
            out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        out.sum().backward()
        torch.relu(x)  # the boxed fallback
        _C._half_gemm_native_bf16(False)
        try:
            w @ w  # the half GEMM's widening kernel
        finally:
            _C._half_gemm_native_bf16(True)

    t = _step_trace_of(step, tmp_path)
    kernels = {o["name"]: o for o in t["ops"] if o["kind"] == "kernel"}
    fwd = kernels["aten::_scaled_dot_product_efficient_attention"]
    bwd = kernels["aten::_scaled_dot_product_efficient_attention_backward"]
    # PyTorch's own formulas (torch.utils.flop_counter) on the same call
    with FlopCounterMode(display=False) as fc:
        with sdpa_kernel([SDPBackend.EFFICIENT_ATTENTION]):
            out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        out.sum().backward()
    counts = {str(op): n for op, n in fc.get_flop_counts()["Global"].items()}
    assert fwd["flops"] == counts["aten._scaled_dot_product_efficient_attention"] > 0
    assert bwd["flops"] == counts["aten._scaled_dot_product_efficient_attention_backward"] > 0
    assert fwd["inputs"][0]["shape"] == [b, h, seq, d] and fwd["inputs"][0]["dtype"] == "bfloat16"
    assert fwd["outputs"][0]["shape"] == [b, h, seq, d] and fwd["bytes_read"] >= 3 * q.numel() * 2
    assert bwd["bytes_written"] >= 3 * q.numel() * 2
    assert kernels["aten::relu"]["bytes_read"] == x.numel() * 4
    assert kernels["aten::mm"]["flops"] == 2 * 64**3
