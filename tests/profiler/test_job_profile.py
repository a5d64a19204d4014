"""npurun --profile on 2 ranks: per-rank traces of steps A..B-1 with hccl ranges (sizes, group,
sequence numbers, record_param_comms fields), device events on the communicator's stream lane,
distributedInfo naming hccl; the merge gives one process per rank."""
import json
import subprocess
import sys

import pytest

from npudist.testing.npurun import run_npurun
from tests.profiler.conftest import events, load_trace

pytestmark = pytest.mark.timeout(240)
WORKER = "tests/profiler/workers/train_steps.py"
SUFFIX = " (npu kernel)"


@pytest.fixture(scope="module")
def job(tmp_path_factory):
    out = tmp_path_factory.mktemp("prof")
    done = run_npurun(["--nproc", "2", "--profile", str(out), "--profile-steps", "2:4", WORKER],
                      env={"STEPS": "4"}, timeout=200)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return out


def test_every_rank_writes_the_steps_asked_for(job):
    for rank in range(2):
        trace = load_trace(job / f"rank{rank}.json")
        info = trace["distributedInfo"]
        assert info["backend"] == "hccl" and info["rank"] == rank and info["world_size"] == 2
        steps = sorted(e["name"] for e in events(trace, "user_annotation") if e["name"].startswith("ProfilerStep#"))
        assert steps == ["ProfilerStep#1", "ProfilerStep#2"], steps  # our steps 2, 3 = torch's 1, 2
        kernels = events(trace, "kernel")
        # compute on the default stream lane, collectives on the communicator's own lane
        mm = [k for k in kernels if k["name"] == "aten::addmm" + SUFFIX]
        assert len(mm) == 4 and {k["pid"] for k in mm} == {rank} and {k["tid"] for k in mm} == {1}
        colls = [k for k in kernels if k["args"].get("category") == "collective"]
        assert colls and len({k["tid"] for k in colls}) == 1 and {k["tid"] for k in colls} != {1}
        assert all(k["pid"] == rank for k in colls)


def test_hccl_ranges_carry_the_record_param_comms_fields(job):
    trace = load_trace(job / "rank0.json")
    cpu = events(trace, "cpu_op")
    comms = [e for e in cpu if e["name"] == "record_param_comms"]
    by_name = {}
    for e in comms:
        by_name.setdefault(e["args"]["Collective name"], []).append(e)
    assert len(by_name["all_reduce"]) == 2 * 4  # 4 parameters, 2 steps
    ar = by_name["all_reduce"][0]["args"]
    assert ar["Process Group Name"] == "0" and ar["Process Group Description"] == "default_pg"
    assert ar["Group size"] == 2 and ar["dtype"] == "Float" and ar["Rank"] == 0
    assert ar["In msg nelems"] == ar["Out msg nelems"] > 0
    seqs = [e["args"]["Seq"] for e in by_name["all_reduce"]]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)
    ag = by_name["all_gather_into_tensor"][0]["args"]
    assert ag["In msg nelems"] == 4 and ag["Out msg nelems"] == 8
    assert "send" in by_name
    ranges = {e["name"] for e in events(trace, "user_annotation")}
    assert {"hccl:all_reduce", "hccl:all_gather_into_tensor", "hccl:send"} <= ranges, ranges
    # The device event of each collective: linked to its record_param_comms, same fields.
    ids = {e["args"]["External id"]: e for e in comms}
    dev = [k for k in events(trace, "kernel") if k["args"].get("category") == "collective"]
    ar_dev = [k for k in dev if k["name"] == "hccl:all_reduce" + SUFFIX]
    assert len(ar_dev) == 8
    for k in dev:
        op = ids[k["args"]["External id"]]
        assert k["args"]["Seq"] == op["args"]["Seq"]
        assert k["args"]["bytes"] > 0 and k["args"]["Process Group Name"] == "0"


def test_merge_gives_one_process_per_rank(job, tmp_path):
    out = tmp_path / "job.json"
    done = subprocess.run([sys.executable, "-m", "npudist.profiler", "merge", str(job), "-o", str(out)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "ranks [0, 1]" in done.stdout
    merged = json.loads(out.read_text())
    procs = {e["pid"]: e["args"]["name"] for e in merged["traceEvents"]
             if e.get("ph") == "M" and e.get("name") == "process_name"}
    assert sorted(procs) == [0, 1] and procs[1].startswith("rank 1")
    assert {e["pid"] for e in merged["traceEvents"]} == {0, 1}
    lanes = {(e["pid"], e["args"]["name"]) for e in merged["traceEvents"]
             if e.get("ph") == "M" and e.get("name") == "thread_name" and e["args"]["name"].startswith("npu")}
    assert (0, "npu 0 stream 1 (stream_id 0)") in lanes and (1, "npu 1 stream 1 (stream_id 0)") in lanes
    # The same collective (same Seq) on both ranks, on the shared host clock: the spans overlap.
    spans = {}
    for e in merged["traceEvents"]:
        if e.get("cat") == "kernel" and e["name"] == "hccl:all_reduce" + SUFFIX:
            spans.setdefault(e["args"]["Seq"], {})[e["pid"]] = (e["ts"], e["ts"] + e["dur"])
    both = [s for s in spans.values() if len(s) == 2]
    assert both
    overlapping = [s for s in both if s[0][0] <= s[1][1] and s[1][0] <= s[0][1]]
    assert overlapping, both


def test_holistic_trace_analysis_reads_the_rank_traces(job):
    try:
        from hta.trace_analysis import TraceAnalysis
    except ImportError:
        pytest.fail("HolisticTraceAnalysis is not installed: pip install HolisticTraceAnalysis (run.sh DEPS has it)")
    analysis = TraceAnalysis(trace_dir=str(job))
    breakdown = analysis.get_temporal_breakdown(visualize=False)
    assert sorted(breakdown["rank"]) == [0, 1]
    assert (breakdown["compute_time(us)"] > 0).all(), breakdown
    assert (breakdown["kernel_time(us)"] > 0).all(), breakdown
