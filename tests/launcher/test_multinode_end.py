"""Several nodes: every npurun ends in bounded time, non-zero when any rank failed; SIGTERM is
acted on at once even while torch's agent waits in its exit barrier (a blocking store call)."""
import signal
import time

import psutil
import pytest

from npudist.testing.multiproc import free_port

from . import JOB, Running, facts

pytestmark = pytest.mark.timeout(240)

BOUND = 90  # far below torch's 300 s exit barrier


def _two_nodes(job_args, rdzv_id):
    port = free_port()
    common = ["--nnodes", "2", "--nproc", "2", "--rdzv-backend", "c10d", "--rdzv-endpoint", f"127.0.0.1:{port}",
              "--rdzv-id", rdzv_id, JOB, *job_args]
    first = Running(common, env={"NPUDIST_HOSTNAME": "host0"})
    time.sleep(1)  # the first npurun hosts the store
    return [first, Running(common, env={"NPUDIST_HOSTNAME": "host1"})]


@pytest.mark.parametrize("fail_rank", [0, 2])  # on the node hosting the store (as a rule), on the other
def test_a_rank_exiting_3_after_the_collective_ends_both_nodes_nonzero(fail_rank):
    nodes = _two_nodes(["collective-exit", str(fail_rank)], f"end-{fail_rank}")
    start = time.monotonic()
    results = [n.finish(timeout=BOUND + 30) for n in nodes]
    assert time.monotonic() - start < BOUND, results
    per_node = [facts(out) for _, out, _ in results]
    assert sorted(r for f in per_node for r in f) == [0, 1, 2, 3]
    for (code, out, err), f in zip(results, per_node):
        assert code == 3, out + err  # the failed rank's exit code, on both nodes
        assert "npurun: job FAILED" in err, err
        if fail_rank in f:
            assert f"rank {fail_rank} failed first (exit code 3)" in err
        else:  # the other node's summary names the rank and its node
            assert f"rank {fail_rank} on node " in err and "(exit code 3)" in err, err
            assert "did not fail" in err
    assert all(v["sum"] == "4" for f in per_node for v in f.values())


def test_sigterm_to_an_npurun_waiting_for_the_other_node_is_acted_on_at_once():
    # ranks 0 and 1 finish; ranks 2 and 3 (the other npurun) keep running: the npurun with
    # ranks 0 and 1 waits in torch's exit barrier, blocked in a store call
    nodes = _two_nodes(["collective-exit", "-1", "2"], "end-sigterm")
    found = {}
    deadline = time.monotonic() + BOUND
    while len(found) < 4 and time.monotonic() < deadline:
        for i, n in enumerate(nodes):
            for r, v in facts("\n".join(n.out)).items():
                found[r] = (i, int(v["pid"]))
        time.sleep(0.2)
    assert len(found) == 4, [n.out + n.err for n in nodes]
    waiting = nodes[found[0][0]]
    other = nodes[1 - found[0][0]]
    assert found[1][0] == found[0][0] != found[2][0] == found[3][0]
    while any(psutil.pid_exists(found[r][1]) and psutil.Process(found[r][1]).status() != psutil.STATUS_ZOMBIE
              for r in (0, 1)):
        time.sleep(0.1)
    time.sleep(3)  # the agent is in its exit barrier now
    assert waiting.proc.poll() is None, waiting.err
    start = time.monotonic()
    waiting.proc.send_signal(signal.SIGTERM)
    code, out, err = waiting.finish(timeout=60)
    assert time.monotonic() - start < 15, err
    assert code == 128 + signal.SIGTERM, err
    assert "npurun: interrupted by SIGTERM" in err
    # the other npurun (ranks still running, store host gone) also ends on SIGTERM at once, and
    # stops its ranks (its board calls must not wait out TCPStore's reconnect retries: was 10-20 s)
    start = time.monotonic()
    other.proc.send_signal(signal.SIGTERM)
    code, out, err = other.finish(timeout=60)
    assert time.monotonic() - start < 10, err
    assert code != 0, err
    for r in (2, 3):
        pid = found[r][1]
        assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
