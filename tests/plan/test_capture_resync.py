"""The capture follows only the storages FSDP2 can resize (those empty when the step begins, and those
``torch.empty`` makes in it): its trace equals the reference that checks every storage made before the step before
every op (``NPUDIST_PLAN_CAPTURE_RESYNC_ALL=1``, what the capture did before), op for op and memory event for
memory event, on a small decoder at TP2 PP2 with FSDP2 over dp 2 (1F1B, 4 micro-batches: the 70B benchmark's
layout, scaled down)."""
import os

import pytest

from npudist.plan import trace as st
from npudist.testing.multiproc import run_python

pytestmark = pytest.mark.timeout(420)
HERE = os.path.dirname(os.path.abspath(__file__))
ARGS = ["--dim", "256", "--heads", "4", "--kv-heads", "2", "--layers", "4", "--seq", "64", "--tp", "2", "--pp", "2",
        "--batch", "4", "--microbatches", "4", "--steps", "2"]


def _capture(out, resync_all: bool) -> dict:
    # the harness's environment policy: nothing of the caller's NPUDIST_* environment leaks into either capture
    r = run_python(["-m", "npudist.plan", "capture", "--hardware", os.path.join(HERE, "hw_test.toml"),
                    "--nnodes", "1", "--nproc-per-node", "8", "--out", str(out), "--ranks", "0,4", "--no-predict",
                    os.path.join(HERE, "workers", "train_decoder.py"), *ARGS],
                   env={"NPUDIST_PLAN_CAPTURE_RESYNC_ALL": "1" if resync_all else "0"}, timeout=400)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    return st.load_dir(str(out))


def _events(t: dict) -> list[dict]:
    # a storage's address (``addr``) is wherever the host allocator put it: differs between any two runs
    return [{k: v for k, v in e.items() if k != "addr"} for e in t["memory"]["events"]]


def test_following_fsdp2s_storages_only_captures_the_same_step(tmp_path):
    fast, ref = _capture(tmp_path / "fast", False), _capture(tmp_path / "ref", True)
    assert sorted(fast) == sorted(ref) and {0, 4} <= set(fast)  # the traced ranks, expanded over their stage
    for rank in fast:
        f, r = fast[rank], ref[rank]
        assert f["ops"] == r["ops"], rank
        assert _events(f) == _events(r), rank
        assert f["memory"]["peak_allocated"] == r["memory"]["peak_allocated"], rank
        assert f["memory"]["baseline_allocated"] == r["memory"]["baseline_allocated"], rank
        # FSDP2's unshard / reshard are in it: the check is not vacuous
        resizes = [e for e in f["memory"]["events"] if e["op"] == "storage resize_ (FSDP2 unshard)"]
        assert resizes and len(f["ops"]) > 100, rank
