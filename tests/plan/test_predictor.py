"""The predictor's pieces against hand calculations (docs/plan.md, "Method"), on synthetic traces."""
import json
import math
import os

import pytest

from npudist.plan import hardware
from npudist.plan.cost import collective_time, compute_time, gemm_efficiency
from npudist.plan.memory import GiB
from npudist.plan.predict import predict
from npudist.plan.replay import Replay
from npudist.plan.report import step_columns
from npudist.profiler.step_trace import op_flops
from tests.plan.synthetic import collective, kernel, one_f_one_b, trace, wait

HW = os.path.join(os.path.dirname(__file__), "hw_test.toml")


@pytest.fixture(scope="module")
def hw():
    return hardware.load(HW)


def mm(m, k, n):
    shapes = [[m, k], [k, n]]
    return {"kind": "kernel", "name": "aten::mm", "stream": 0, "flops": op_flops("aten::mm", shapes, ["", ""]),
            "inputs": [{"shape": s, "dtype": "float32", "stride": []} for s in shapes],
            "bytes_read": (m * k + k * n) * 4, "bytes_written": m * n * 4}


def test_one_gemm(hw):
    op = mm(128, 256, 64)
    assert op["flops"] == 2 * 128 * 64 * 256  # torch.utils.flop_counter's mm formula
    # 8 x 4 = 32 tiles of 16x16 in 8 waves of 4 cores, no padding: efficiency 0.5 of 1 TFLOP/s, + 2 us launch
    assert compute_time(hw, op) == pytest.approx(2 * 128 * 64 * 256 / 0.5e12 + 2e-6, rel=1e-12)
    # M = 100: ceil(100/16) = 7 row tiles -> 28 tiles in 7 waves; useful 100*64*256 of 7*4*16*16*256
    assert gemm_efficiency(hw, 1, 100, 64, 256) == pytest.approx(0.5 * 100 / 112)
    op = mm(100, 256, 64)
    assert compute_time(hw, op) == pytest.approx(op["flops"] / (1e12 * 0.5 * 100 / 112) + 2e-6)
    # an op without FLOPs is bound by its bytes: 12 MB at 100 GB/s, + 2 us launch
    add = {"kind": "kernel", "name": "aten::add", "stream": 0, "flops": 0, "bytes_read": 8_000_000,
           "bytes_written": 4_000_000}
    assert compute_time(hw, add) == pytest.approx(12e6 / 100e9 + 2e-6)


def test_ring_all_reduce(hw):
    s = 1 << 20
    expect = 5e-6 + s * 2 * 3 / 4 / 10e9  # latency + S * 2(n-1)/n / link
    assert collective_time(hw, "all_reduce", s, [0, 1, 2, 3]) == pytest.approx(expect)
    # in the replay it starts when the last rank arrives (rank r computes 10*r us first)
    traces = {r: trace(r, 4, [kernel(10.0 * r), collective("all_reduce", 1, [0, 1, 2, 3], s), wait(1)])
              for r in range(4)}
    tl = Replay(traces, hw).run()
    for r in range(4):
        comm = [i for i in tl[r].intervals if i.kind == "comm"][0]
        assert comm.start == pytest.approx(10.0 * r * 1e-6)  # own arrival
        assert comm.end == pytest.approx(30e-6 + expect)
        assert tl[r].steps[1][1] == pytest.approx(30e-6 + expect)


@pytest.mark.parametrize("comm_us, step_us, exposed", [(80.0, 150.0, 0.0), (130.0, 180.0, 30.0)])
def test_two_streams_overlap(hw, comm_us, step_us, exposed):
    # an all_gather on the communicator's stream runs while 100 us of compute run on stream 0; the next
    # kernel waits for it
    traces = {r: trace(r, 2, [collective("all_gather", 1, [0, 1], us=comm_us), kernel(100.0), wait(1), kernel(50.0)])
              for r in range(2)}
    tl = Replay(traces, hw).run()
    for r in range(2):
        cols = step_columns(tl[r], 1)
        s, e = tl[r].steps[1]
        assert (e - s) * 1e6 == pytest.approx(step_us)
        assert cols["Computing"] == pytest.approx(150.0)
        assert cols["Communication"] == pytest.approx(comm_us)
        assert cols["Overlapped"] == pytest.approx(comm_us - exposed)
        assert cols["Communication(Not Overlapped)"] == pytest.approx(exposed)
        assert cols["Free"] == pytest.approx(0.0, abs=1e-9)


@pytest.mark.parametrize("p, m", [(4, 8), (2, 4), (4, 4)])
def test_one_f_one_b_bubble(hw, p, m):
    f = b = 100.0
    traces = one_f_one_b(p, m, f, b)
    pred = predict(traces, hw)
    total = (m + p - 1) * (f + b)
    assert pred.step_time_s * 1e6 == pytest.approx(total)
    first = [r for r in pred.rows if r["Index"] == 0][0]
    assert first["Bubble"] / (pred.step_time_s * 1e6) == pytest.approx((p - 1) / (m + p - 1))
    assert first["Stage"] == pytest.approx(m * (f + b))
    # the sends and receives pair up: every stage ran all of its work
    for r in pred.rows:
        assert r["Computing"] == pytest.approx(m * (f + b))


def test_deadlock_names_the_collectives(hw):
    traces = {0: trace(0, 2, [collective("all_reduce", 1, [0, 1], 8), wait(1)]),
              1: trace(1, 2, [collective("all_gather", 1, [0, 1], 8, pg="1"), wait(1, pg="1")])}
    with pytest.raises(ValueError, match=r"rank 0 .*all_reduce"):
        Replay(traces, hw).run()


def test_does_not_fit_names_rank_peak_capacity_and_contributors(hw, tmp_path):
    mb = 1 << 20
    mem = {"baseline_allocated": 300 * mb, "events": [
        {"t_us": 1, "step": 1, "bytes": 600 * mb, "addr": 1, "op": "aten::mm"},
        {"t_us": 2, "step": 1, "bytes": 200 * mb, "addr": 2, "op": "hccl:all_gather"},
        {"t_us": 3, "step": 1, "bytes": -600 * mb, "addr": 1, "op": "aten::mm"}]}
    traces = {0: trace(0, 2, [kernel(1.0)]), 1: trace(1, 2, [kernel(1.0)], memory=mem)}
    pred = predict(traces, hw)
    assert not pred.fits and pred.peak_memory_gib == pytest.approx(1100 / 1024)
    (msg,) = pred.not_fitting()
    assert msg.startswith("does not fit: rank 1 needs 1.074 GiB in step 1, the device has 1.000 GiB")
    assert msg.index("aten::mm 0.586 GiB") < msg.index("allocated before the traced steps") < msg.index("hccl:all")
    out = pred.to_json()
    assert out["fits"] is False and out["peak_memory_gib"] == pytest.approx(1100 / 1024)
    for key in ("step_time_s", "tokens_per_s_per_npu", "mfu", "columns"):
        assert key in out
    json.dumps(out)


def test_hardware_errors_name_the_key(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text('name = "x"\n[node]\ndevices = 8\n[compute]\npeak_tflops = { float32 = -1 }\n')
    with pytest.raises(ValueError, match=r"bad.toml: \[compute\] peak_tflops.float32 = -1"):
        hardware.load(str(bad))
    bad.write_text('[node]\ndevices = 8\n[compute]\npeak_tflops = { float32 = 1 }\n[memory]\ncapacity_gib = 1\n')
    with pytest.raises(ValueError, match=r"\[memory\] needs 'bandwidth_gbps'"):
        hardware.load(str(bad))
    with pytest.raises(FileNotFoundError, match="plan_hardware_here"):
        hardware.load(str(tmp_path / "missing.toml"))
    assert math.isclose(hardware.load(HW).capacity_bytes, GiB)


def test_host_gaps_delay_issue(hw):
    # the host spends 30 us before the first kernel and 5 us before the second (which then waits for the stream)
    ops = [kernel(10.0, host_gap_us=30.0), kernel(10.0, host_gap_us=5.0)]
    tl = Replay({0: trace(0, 1, ops)}, hw).run()
    assert tl[0].steps[1][1] * 1e6 == pytest.approx(50.0)
    hw2 = hardware.load(HW)
    hw2.host_speed = 2.0  # a host twice as fast halves the gaps: 15 + 10, then max(17.5, 25) + 10
    tl = Replay({0: trace(0, 1, [kernel(10.0, host_gap_us=30.0), kernel(10.0, host_gap_us=5.0)])}, hw2).run()
    assert tl[0].steps[1][1] * 1e6 == pytest.approx(35.0)


def test_host_synchronize_waits_for_the_device(hw):
    # 100 us on stream 3, an event recorded after it, the host synchronizes on it: the next kernel on stream 0
    # cannot be issued before 100 us (without the synchronize it would run at once)
    ops = [kernel(100.0, stream=3), {"kind": "record", "stream": 3, "event": 1},
           {"kind": "sync_event", "stream": 0, "event": 1}, kernel(10.0)]
    tl = Replay({0: trace(0, 1, ops)}, hw).run()
    k = [i for i in tl[0].intervals if i.stream == 0][0]
    assert k.start * 1e6 == pytest.approx(100.0) and tl[0].steps[1][1] * 1e6 == pytest.approx(110.0)
    ops = [kernel(100.0, stream=3), kernel(10.0)]
    tl = Replay({0: trace(0, 1, ops)}, hw).run()
    assert [i for i in tl[0].intervals if i.stream == 0][0].start == 0.0
