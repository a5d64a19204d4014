"""The Ascend-specific cost terms of npudist/plan/cost.py (docs/plan.md, "Ascend hardware"): the fused
attention's vector-unit work and HCCL's all_to_all staging copy."""
import copy

import pytest

from npudist.dtensor.ops.fusion_attention import attention_flops
from npudist.plan import hardware
from npudist.plan.cost import attention_head_dim, attention_vector_time, collective_time, compute_time


def _attention(name: str, s: int, b: int, heads: int, d: int) -> dict:
    """A fused attention op as a capture records it (layout SBH, causal sparse_mode 2)."""
    fwd = attention_flops((s, b, heads * d), (s, b, heads * d), heads, "SBH", True)
    q = {"shape": [s, b, heads * d], "dtype": "bfloat16", "stride": [b * heads * d, heads * d, 1]}
    if name.endswith("_grad"):
        conc, flops = ["", "", "", "", heads, "SBH"], 5 * fwd // 2
    else:
        conc, flops = ["", "", "", heads, "SBH"], fwd
    return {"kind": "kernel", "name": name, "inputs": [q, q, q], "concrete": conc, "flops": flops,
            "bytes_read": 0, "bytes_written": 0}


@pytest.fixture
def hw():
    return hardware.load("atlas800t-a2")


def test_head_dim_from_the_trace(hw):
    assert attention_head_dim(_attention("npu::npu_fusion_attention", 128, 1, 16, 64)) == 64
    assert attention_head_dim(_attention("npu::npu_fusion_attention_grad", 128, 1, 8, 128)) == 128


def test_vector_work_per_score_element_does_not_shrink_with_head_dim(hw):
    # the same score matrix (s, heads) at head dim 64 and 128: the cube work halves at 64, the vector work
    # only loses the output-rescale term 2 d / kv_block
    a = attention_vector_time(hw, _attention("npu::npu_fusion_attention", 4096, 1, 16, 64))
    b = attention_vector_time(hw, _attention("npu::npu_fusion_attention", 4096, 1, 16, 128))
    att = hw.attention
    assert a / b == pytest.approx((att["forward_passes"] + att["exp_passes"] + 2 * 64 / att["kv_block"])
                                  / (att["forward_passes"] + att["exp_passes"] + 2 * 128 / att["kv_block"]))
    # by hand: score elements x passes x 4 B / (48 AIV x 256 B x 1.8 GHz x efficiency)
    elements = 16 * 4096 * 4097 / 2
    passes = att["forward_passes"] + att["exp_passes"] + 2 * 64 / att["kv_block"]
    assert a == pytest.approx(elements * passes * 4 / (48 * 256 * 1.8e9 * hw.efficiency))


def test_attention_takes_the_slower_unit(hw):
    # on a 910B2 (docs/plan.md): the forward at head dim 64 is vector-bound by ~1.8x; at 128, and the backward
    # (5 GEMMs for 7 + exp vector passes) at both, the cube sets the time
    expect = {("npu::npu_fusion_attention", 64): (1.7, 1.85), ("npu::npu_fusion_attention", 128): (1.0, 1.0),
              ("npu::npu_fusion_attention_grad", 64): (1.0, 1.0), ("npu::npu_fusion_attention_grad", 128): (1.0, 1.0)}
    for (name, d), (lo, hi) in expect.items():
        op = _attention(name, 4096, 1, 2048 // d, d)
        cube_only = copy.copy(hw)
        cube_only.vector_cores = 0
        t, t_cube = compute_time(hw, op), compute_time(cube_only, op)
        assert t == pytest.approx(max(t_cube - hw.launch_s, attention_vector_time(hw, op)) + hw.launch_s)
        assert lo - 0.001 <= (t - hw.launch_s) / (t_cube - hw.launch_s) <= hi + 0.001, (name, d)


def test_other_ops_have_no_vector_term(hw):
    op = {"kind": "kernel", "name": "aten::mm", "inputs": [], "flops": 10 ** 9}
    assert attention_vector_time(hw, op) == 0.0


def test_all_to_all_pays_the_staging_copy(hw):
    s = 1 << 30
    ag = collective_time(hw, "all_gather", s, list(range(8)))
    a2a = collective_time(hw, "all_to_all", s, list(range(8)))
    assert a2a - ag == pytest.approx(2 * s / hw.mem_bw)  # read + write of the send buffer at HBM bandwidth
    no_copy = copy.copy(hw)
    no_copy.all_to_all_copies = 0
    assert collective_time(no_copy, "all_to_all", s, list(range(8))) == pytest.approx(ag)
    # 2 ranks: HCCL's pairwise path copies into and out of its CCL buffer
    two = collective_time(hw, "all_to_all", s, [0, 1]) - collective_time(hw, "all_gather", s, [0, 1])
    assert two == pytest.approx(2 * 2 * s / hw.mem_bw)


def test_bad_attention_table_names_the_key(tmp_path):
    src = open(hardware.resolve("atlas800t-a2"), encoding="utf-8").read()
    bad = tmp_path / "hw.toml"
    bad.write_text(src.replace("exp_passes = 2 ", "exp_passes = -1 "), encoding="utf-8")
    with pytest.raises(ValueError, match=r"\[compute.attention\] exp_passes = -1"):
        hardware.load(str(bad))
    bad.write_text(src.replace("exp_passes = 2 ", "exp_cycles = 2 "), encoding="utf-8")
    with pytest.raises(ValueError, match="'exp_cycles' is not a key"):
        hardware.load(str(bad))


def test_vector_cores_need_width_and_clock(tmp_path):
    src = open(hardware.resolve("atlas800t-a2"), encoding="utf-8").read()
    bad = tmp_path / "hw.toml"
    bad.write_text(src.replace("vector_clock_mhz = 1800", "vector_clock_mhz = 0"), encoding="utf-8")
    with pytest.raises(ValueError, match="vector_cores needs positive vector_bytes_per_cycle and vector_clock_mhz"):
        hardware.load(str(bad))
    bad.write_text(src.replace("all_to_all_copies = 1", "all_to_all_copies = -1"), encoding="utf-8")
    with pytest.raises(ValueError, match="all_to_all_copies and all_to_all_copies_two_ranks must be >= 0"):
        hardware.load(str(bad))
