"""Several nodes: two npurun invocations on one machine form one job; wrong addresses fail fast."""
import time

import pytest

from npudist.testing.multiproc import free_port

from . import JOB, Running, facts, run_npurun

pytestmark = pytest.mark.timeout(240)


def test_two_nodes_on_loopback_form_one_job():
    port = free_port()
    common = ["--nnodes", "2", "--nproc", "2", "--rdzv-backend", "c10d", "--rdzv-endpoint", f"127.0.0.1:{port}",
              "--rdzv-id", "two-node-test", JOB, "ok"]
    nodes = [Running(common, env={"NPUDIST_HOSTNAME": f"host{i}"}) for i in range(2)]
    results = [n.finish(timeout=180) for n in nodes]
    for code, out, err in results:
        assert code == 0, out + err
    per_node = [facts(out) for _, out, _ in results]
    ranks = sorted(r for f in per_node for r in f)
    assert ranks == [0, 1, 2, 3]
    for i, f in enumerate(per_node):
        assert len(f) == 2
        for _rank, v in f.items():
            assert v["world"] == "4" and v["lws"] == "2" and v["sum"] == "10"
            assert v["host"] == f"host{i}"  # each invocation's environment reaches its ranks
            assert v["device"] == v["local_rank"]
        assert len({v["tag"] for v in f.values()}) == 1
    # one job tag per npurun invocation
    assert per_node[0][min(per_node[0])]["tag"] != per_node[1][min(per_node[1])]["tag"]


@pytest.mark.parametrize("flags,what", [
    (["--rdzv-backend", "c10d", "--rdzv-endpoint", "192.0.2.1:29400"], "192.0.2.1:29400"),  # unroutable
    (["--node-rank", "1", "--master-addr", "127.0.0.1", "--master-port", "@PORT@"], "127.0.0.1:@PORT@"),
])
def test_wrong_rendezvous_address_fails_in_bounded_time(flags, what):
    port = str(free_port())  # nothing listens there
    flags = [f.replace("@PORT@", port) for f in flags]
    start = time.monotonic()
    r = run_npurun(["--nnodes", "2", "--nproc", "1", "--rdzv-connect-timeout", "3", *flags, JOB, "ok"], timeout=90)
    assert r.returncode == 1, r.stdout + r.stderr
    assert f"cannot reach the rendezvous endpoint {what.replace('@PORT@', port)} within 3 s" in r.stderr
    assert "--rdzv-connect-timeout" in r.stderr
    assert r.stdout == ""  # no rank started
    assert time.monotonic() - start < 80  # generous hang bound, not a speed check


@pytest.mark.slow
def test_missing_second_node_times_out_with_a_clear_message():
    port = free_port()
    r = run_npurun(["--nnodes", "2", "--nproc", "1", "--rdzv-backend", "c10d", "--rdzv-endpoint",
                    f"127.0.0.1:{port}", "--rdzv-conf", "join_timeout=5", JOB, "ok"], timeout=120)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "rendezvous timed out" in r.stderr and "--nnodes 2" in r.stderr and "join_timeout" in r.stderr


@pytest.mark.slow
def test_static_rendezvous_two_nodes():
    port = free_port()
    nodes = [Running(["--nnodes", "2", "--node-rank", str(i), "--nproc", "1", "--master-addr", "127.0.0.1",
                      "--master-port", str(port), JOB, "ok"], env={"NPUDIST_HOSTNAME": f"h{i}"}) for i in range(2)]
    results = [n.finish(timeout=180) for n in nodes]
    for i, (code, out, err) in enumerate(results):
        assert code == 0, out + err
        f = facts(out)
        assert list(f) == [i] and f[i]["world"] == "2" and f[i]["sum"] == "3" and f[i]["host"] == f"h{i}"


@pytest.mark.slow
def test_a_failing_rank_on_one_node_ends_the_job_on_both():
    port = free_port()
    common = ["--nnodes", "2", "--nproc", "1", "--rdzv-backend", "c10d", "--rdzv-endpoint", f"127.0.0.1:{port}",
              "--rdzv-id", "fail-test", JOB, "collective-fail"]
    nodes = [Running(common, env={"NPUDIST_HOSTNAME": f"host{i}"}) for i in range(2)]
    results = [n.finish(timeout=180) for n in nodes]
    assert all(code != 0 for code, _, _ in results), results
    errs = "\n".join(err for _, _, err in results)
    assert "first error: ValueError: boom from rank 1" in errs
    assert errs.count("npurun: job FAILED") == 2
