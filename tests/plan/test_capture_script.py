"""``python -m npudist.plan capture`` on unmodified npurun scripts: the flagship at 2 ranks against its real trace,
host reads as placeholders with one warning, data-dependent shapes as an error naming the line, "does not fit",
and the expansion of a representative rank's groups over a 2-D mesh."""
import json
import os
import re
import subprocess
import sys

import pytest

from npudist.plan import trace as st
from npudist.plan.capture import expand_layout
from npudist.plan.cost import collective_kind
from npudist.plan.memory import replay_memory
from npudist.testing.npurun import run_npurun

pytestmark = pytest.mark.timeout(420)
HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
HW = os.path.join(HERE, "hw_test.toml")
DECODER = os.path.join(HERE, "workers", "train_decoder.py")
FLAGSHIP_ARGS = ["--steps", "3", "--log-every", "5", "--ckpt-every", "0", "--no-resume", "--sample-len", "0",
                 "--max-bytes", "200000", "--eval-batches", "1", "--d-model", "64", "--n-layer", "2", "--n-head", "2",
                 "--seq-len", "32", "--batch-size", "4"]
GEMM = {"aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm"}


def capture(out, script, args, nnodes=1, nproc=2, hw=HW, extra=()):
    cmd = [sys.executable, "-m", "npudist.plan", "capture", "--hardware", hw, "--nnodes", str(nnodes),
           "--nproc-per-node", str(nproc), "--out", str(out), *extra, script, *args]
    return subprocess.run(cmd, capture_output=True, text=True, cwd=REPO, timeout=400)


def _line(path, text):
    with open(path) as f:
        return next(i for i, ln in enumerate(f, 1) if text in ln)


@pytest.fixture(scope="module")
def flagship(tmp_path_factory):
    out = tmp_path_factory.mktemp("flagship")
    real = run_npurun(["--nproc", "2", "--profile", str(out / "real"), "--profile-steps", "1:2", "examples/train_gpt.py",
                       "--ckpt-dir", str(out / "ckpt_real"), *FLAGSHIP_ARGS], timeout=400, cwd=REPO)
    assert real.returncode == 0, real.stdout[-3000:] + real.stderr[-3000:]
    cap = capture(out / "cap", "examples/train_gpt.py", ["--ckpt-dir", str(out / "ckpt_cap"), *FLAGSHIP_ARGS])
    assert cap.returncode == 0, cap.stdout[-3000:] + cap.stderr[-3000:]
    assert not (out / "ckpt_cap").exists()  # the capture stops after the recorded step: nothing saved
    return st.load_dir(str(out / "real")), st.load_dir(str(out / "cap")), cap


def test_flagship_capture_matches_its_real_trace(flagship):
    real, cap, _ = flagship
    assert sorted(cap) == [0, 1] and cap[0]["source"] == "logical capture"
    for rank in (0, 1):
        r, c = real[rank], cap[rank]
        assert r["steps"] == c["steps"] == [1] and r["tokens_per_step"] == c["tokens_per_step"] == 4 * 32

        def colls(t):
            return [(collective_kind(o["name"]), o["in_bytes"], o["out_bytes"], o["group_ranks"], o["dtype"])
                    for o in t["ops"] if o["kind"] == "collective"]

        def gemms(t):
            return [(o["name"], [i["shape"] for i in o["inputs"] if isinstance(i, dict)],
                     [i["dtype"] for i in o["inputs"] if isinstance(i, dict)], o["flops"]) for o in t["ops"]
                    if o["kind"] == "kernel" and o["name"] in GEMM]

        # FSDP2's all-gathers and reduce-scatters, the clipping all_reduce and the stop flag's, in order, same bytes
        assert colls(c) == colls(r) and len(colls(r)) == 11
        # every GEMM of forward and backward in order, with its shapes, dtype and FLOPs
        assert gemms(c) == gemms(r) and len(gemms(r)) == 27
        # memory: what was allocated before the step is the same; the peak within 5 % of the allocator's
        assert c["memory"]["baseline_allocated"] == r["memory"]["baseline_allocated"]
        assert replay_memory(c).peak_bytes == pytest.approx(r["memory"]["allocator_peak_allocated"], rel=0.05)


def test_flagship_capture_reads_are_placeholders(flagship):
    _, _, cap = flagship
    # the flagship reads its stop flag (stop.item()) each step: one warning naming that line, twice (warm-up, step)
    line = _line(os.path.join(REPO, "examples", "train_gpt.py"), "stopped = bool(stop.item())")
    assert cap.stderr.count("HostReadWarning") == 1
    assert re.search(rf"train_gpt.py:{line} \(2x\)", cap.stderr), cap.stderr[-2000:]
    assert "predicted" in cap.stdout and "tokens/s per npu" in cap.stdout


def test_item_in_the_loop_captures_with_the_warning(tmp_path):
    r = capture(tmp_path, DECODER, ["--item"], nproc=4)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-3000:]
    line = _line(DECODER, "loss.item()")
    assert r.stderr.count("HostReadWarning") == 1 and f"train_decoder.py:{line} (2x)" in r.stderr, r.stderr[-2000:]
    assert "step 0 loss 0.0000" in r.stdout  # the placeholder
    t = json.loads((tmp_path / "steptrace" / "rank0.steptrace.json").read_text())
    assert t["represents"] == [0, 1, 2, 3] and sorted(st.load_dir(str(tmp_path))) == [0, 1, 2, 3]


def test_data_dependent_shape_is_an_error_naming_the_line(tmp_path):
    r = capture(tmp_path, DECODER, ["--nonzero"])
    assert r.returncode == 2, r.stdout[-2000:] + r.stderr[-3000:]
    line = _line(DECODER, "logits[logits > 0]")
    assert re.search(rf"error: aten::index at \S*train_decoder.py:{line}: its output shape depends on tensor values",
                     r.stderr), r.stderr[-2000:]


def test_oversized_job_does_not_fit(tmp_path):
    small = tmp_path / "small.toml"
    small.write_text(open(HW).read().replace("capacity_gib = 1.0", "capacity_gib = 0.002"))
    r = capture(tmp_path / "cap", DECODER, ["--dim", "512", "--ffn", "1376", "--layers", "4"], hw=str(small))
    assert r.returncode == 3, r.stdout[-2000:] + r.stderr[-3000:]
    assert re.search(r"does not fit: rank 0 needs [\d.]+ GiB in step 1, the device has 0.002 GiB; largest at the "
                     r"peak: .+ GiB", r.stdout), r.stdout[-2000:]
    assert "does not fit: rank 1 needs" in r.stdout  # the expanded rank too


def test_script_that_ends_too_early(tmp_path):
    r = capture(tmp_path, DECODER, ["--steps", "1"])
    assert r.returncode == 2 and "the capture needs 2 step boundaries" in r.stderr, r.stderr[-2000:]


def test_expansion_gives_each_rank_its_own_groups():
    # rank 0 of a (dp 4, tp 2) mesh: tp group [0, 1], dp group [0, 2, 4, 6], pipeline peer 8
    ops = [{"kind": "collective", "name": "all_gather_into_tensor", "pg": "1", "seq": 1, "group_ranks": [0, 1],
            "stream": 9, "issue_stream": 0, "bytes": 8, "is_p2p": False},
           {"kind": "collective", "name": "_reduce_scatter_base", "pg": "2", "seq": 1, "group_ranks": [0, 2, 4, 6],
            "stream": 9, "issue_stream": 0, "bytes": 8, "is_p2p": False},
           {"kind": "wait_collective", "stream": 0, "pg": "2", "seq": 1, "is_p2p": False},
           {"kind": "collective", "name": "send", "pg": "3", "seq": 1, "group_ranks": [0, 8], "peer": 8,
            "stream": 9, "issue_stream": 0, "bytes": 8, "is_p2p": True}]
    out = expand_layout({"rank": 0, "ops": ops}, [0, 5])
    r5 = out[5]["ops"]
    assert r5[0]["group_ranks"] == [4, 5] and r5[0]["pg"] == "1@4"
    assert r5[1]["group_ranks"] == [1, 3, 5, 7] and r5[1]["pg"] == "2@1" and r5[2]["pg"] == "2@1"
    assert r5[3]["peer"] == 13 and r5[3]["group_ranks"] == [5, 13]
    assert out[0]["ops"][0]["group_ranks"] == [0, 1] and out[0]["ops"][0]["pg"] == "1@0"


def test_moving_a_fake_module_is_a_clear_error(tmp_path):
    script = tmp_path / "to.py"
    script.write_text("import os, torch, torch.distributed as dist, npudist\n"
                      "torch.npu.set_device(int(os.environ['LOCAL_RANK']))\n"
                      "dist.init_process_group('hccl')\n"
                      "m = torch.nn.Linear(4, 4, device='npu')\n"
                      "m.to(torch.bfloat16)\n")
    r = capture(tmp_path / "cap", str(script), [])
    assert r.returncode == 2, r.stdout[-2000:] + r.stderr[-3000:]
    assert re.search(r"error: \S*to.py:5: nn.Module.to\(\) / _apply on a module whose parameters are fake npu tensors",
                     r.stderr), r.stderr[-2000:]


PIPELINE = os.path.join(HERE, "workers", "train_pipeline.py")


def _pairs_and_bubble(tmp_path, schedule):
    traces = st.load_dir(str(tmp_path))
    assert sorted(traces) == [0, 1] and all(t["represents"] == [t["rank"]] for t in traces.values())
    p2p = {rk: [o for o in t["ops"] if o["kind"] == "collective"] for rk, t in traces.items()}
    assert all(o["is_p2p"] and o["name"] in ("send", "recv") for ops in p2p.values() for o in ops)
    for a, b in ((0, 1), (1, 0)):
        sends = [o["bytes"] for o in p2p[a] if o["name"] == "send" and o["peer"] == b]
        recvs = [o["bytes"] for o in p2p[b] if o["name"] == "recv" and o["peer"] == a]
        assert sends == recvs and sends, (a, b, sends, recvs)
    micro, stages_per_rank = 4, 2 if schedule == "interleaved" else 1
    # activations forward and gradients backward: each micro-batch crosses every stage boundary twice; the
    # warm-up vote and the shape exchange (real traffic, before the recorded step) are not in the step
    assert sum(len(v) for v in p2p.values()) == 2 * 2 * micro * (2 * stages_per_rank - 1)
    rows = json.loads((tmp_path / "p.json").read_text())["columns"]
    assert {c["Index"] for c in rows} == {0, 1} and any(c["Bubble"] > 0 for c in rows)  # stages wait for receives


@pytest.mark.parametrize("schedule", ["gpipe", "1f1b", "interleaved"])
def test_pipeline_schedules_capture_with_paired_sends(tmp_path, schedule):
    # stages WITHOUT static metadata (torch infers the shapes, exchanging them between stages): one capture
    # process per stage (--ranks 0,1), run at once and joined by a real Gloo pipeline group for the warm-up vote
    # and the shape exchange; the k-th send from a to b pairs with the k-th recv at b from a, same bytes; the
    # prediction replays them (a pipeline bubble)
    r = capture(tmp_path, PIPELINE, ["--schedule", schedule], extra=["--ranks", "0,1", "--json", str(tmp_path / "p.json")])
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-3000:]
    _pairs_and_bubble(tmp_path, schedule)


def test_pipeline_with_static_metadata_one_stage_at_a_time(tmp_path):
    # static metadata: each stage can also be captured alone (--no-predict), the vote answered STATIC
    for rank in (0, 1):
        r = capture(tmp_path, PIPELINE, ["--static"], extra=["--ranks", str(rank), "--no-predict"])
        assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-3000:]
    r = subprocess.run([sys.executable, "-m", "npudist.plan", "predict", str(tmp_path), "--hardware", HW, "--json",
                        str(tmp_path / "p.json"), "--devices-per-node", "2"], capture_output=True, text=True, cwd=REPO,
                       timeout=120)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-3000:]
    _pairs_and_bubble(tmp_path, "1f1b")


def test_a_failing_stage_stops_the_others(tmp_path):
    # rank 1 raises before its pipeline starts; rank 0 would wait for it in the warm-up vote: it is stopped
    r = capture(tmp_path, PIPELINE, ["--fail-rank", "1"], extra=["--ranks", "0,1"])
    assert r.returncode == 2, r.stdout[-2000:] + r.stderr[-3000:]
    assert "rank 1 fails on purpose" in r.stderr
    assert re.search(r"error: the capture of rank 1 \(stage 1 of --ranks 0,1\) failed with exit code 2 .*the other "
                     r"stages' captures were stopped", r.stderr), r.stderr[-2000:]


def test_ranks_that_are_not_the_pipeline_group_are_an_error(tmp_path):
    # 4 stages on 4 ranks, but only ranks 0 and 1 captured: the pipeline group [0, 1, 2, 3] is not the captured
    # ranks, so the shape exchange cannot be answered; the error says what --ranks must be
    r = capture(tmp_path, PIPELINE, [], nproc=4, extra=["--ranks", "0,1"])
    assert r.returncode == 2, r.stdout[-2000:] + r.stderr[-3000:]
    assert re.search(r"error: rank [01] receives pipeline metadata .* over the group \[0, 1, 2, 3\], which this "
                     r"capture does not run: --ranks must name exactly the ranks of one pipeline group, one per stage "
                     r"\(here 0,1,2,3\)", r.stderr), r.stderr[-2000:]
