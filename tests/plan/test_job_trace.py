"""Step traces from npurun --profile on a small 2-rank job (tests/profiler/workers/train_steps.py: an hccl
all_reduce of the gradients, an all_gather and a send/recv pair per step): send/recv pairing and groups in the
trace, the replay pairs them; NPUDIST_PROFILE_STEP_TRACE=0 writes none and adds no step-trace fields."""
import json
import os

import pytest

from npudist.plan import hardware
from npudist.plan import trace as st
from npudist.plan.predict import predict
from npudist.testing.npurun import run_npurun

pytestmark = pytest.mark.timeout(300)
WORKER = "tests/profiler/workers/train_steps.py"
HW = os.path.join(os.path.dirname(__file__), "hw_test.toml")
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _run(out, env):
    done = run_npurun(["--nproc", "2", "--profile", str(out), "--profile-steps", "2:4", WORKER],
                      env={"STEPS": "4", **env}, timeout=240, cwd=REPO)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]


def test_send_recv_pairs_and_groups(tmp_path):
    _run(tmp_path / "on", {})
    traces = st.load_dir(str(tmp_path / "on"))
    for rank, t in traces.items():
        p2p = [o for o in t["ops"] if o["kind"] == "collective" and o["is_p2p"]]
        assert p2p and all(o["peer"] == 1 - rank for o in p2p), p2p
        assert {o["name"] for o in p2p} <= {"send", "recv"}
        ar = [o for o in t["ops"] if o["kind"] == "collective" and o["name"] == "all_reduce"]
        assert ar and all(o["group_ranks"] == [0, 1] for o in ar)
    sends = [o for o in traces[0]["ops"] if o["kind"] == "collective" and o["name"] == "send"]
    recvs = [o for o in traces[1]["ops"] if o["kind"] == "collective" and o["name"] == "recv"]
    assert len(sends) == len(recvs) and [o["bytes"] for o in sends] == [o["bytes"] for o in recvs]
    p = predict(traces, hardware.load(HW))  # the replay pairs every send with its recv (no deadlock)
    assert p.step_time_s > 0


def test_step_traces_off(tmp_path):
    _run(tmp_path / "off", {"NPUDIST_PROFILE_STEP_TRACE": "0"})
    assert not (tmp_path / "off" / "steptrace").exists()
    text = (tmp_path / "off" / "rank0.json").read_text()
    assert "Input Dims" not in text and "npu event record" not in text
    assert json.loads(text)["traceEvents"]
