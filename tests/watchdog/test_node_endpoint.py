"""npurun's node endpoint across a restart (slow tier): after a rank fails and torch's agent
restarts the ranks, the endpoint serves the new attempt's ranks and counts the restart."""
import os
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.request

import pytest
from prometheus_client.parser import text_string_to_metric_families

from npudist.testing.multiproc import free_port
from npudist.testing.npurun import NPURUN, npurun_env

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
WORKER = os.path.join(REPO, "tests", "watchdog", "workers", "train_loop.py")


def _scrape(port):
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=30) as r:
            text = r.read().decode()
    except OSError:
        return {}
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for f in text_string_to_metric_families(text) for s in f.samples}


def _values(samples, name):
    return {dict(labels).get("rank"): v for (n, labels), v in samples.items() if n == name}


def _wait(port, check, what, proc, timeout=240):
    deadline = time.monotonic() + timeout
    samples = {}
    while time.monotonic() < deadline and proc.poll() is None:
        samples = _scrape(port)
        if check(samples):
            return samples
        time.sleep(0.5)
    raise AssertionError(f"{what}: last scrape {samples}")


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_node_endpoint_across_a_restart():
    work = tempfile.mkdtemp(prefix="npudist-node-metrics-")
    port = free_port()
    proc = subprocess.Popen([*NPURUN, "--nproc", "2", "--max-restarts", "1",
                             "--metrics-port", str(port), WORKER, work, "--fail-first-attempt"], env=npurun_env({"TMPDIR": work}), cwd=REPO,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        # attempt 0: both ranks serve (the endpoint starts at import) before rank 1 exits
        _wait(port, lambda s: _values(s, "npudist_rank_metrics_up") == {"0": 1, "1": 1}
              and _values(s, "npudist_npurun_restarts").get(None) == 0, "first attempt", proc)
        with open(os.path.join(work, "exit-1"), "w") as f:
            f.write("5")
        s = _wait(port, lambda s: _values(s, "npudist_npurun_restarts").get(None) == 1
                  and _values(s, "npudist_rank_metrics_up") == {"0": 1, "1": 1}
                  and len(_values(s, "npudist_train_steps_total")) == 2, "second attempt serving", proc)
        assert _values(s, "npudist_rank_up") == {"0": 1, "1": 1}
        assert _values(s, "npudist_rank_exit_code") == {}  # the new attempt's ranks run
        open(os.path.join(work, "stop"), "w").close()
        out, _ = proc.communicate(timeout=240)
        assert proc.returncode == 0, out
        assert "attempt 2 of 2" in out, out
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
        shutil.rmtree(work, ignore_errors=True)
