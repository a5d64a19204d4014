"""Every hccl collective x dtype x size against a local reference, on world
sizes 1-4, with cross-rank bitwise equality of the all_reduce results.

HCCL_BUFFSIZE=1 (512 KiB staging slots) makes the larger sizes take the
chunked, pipelined paths as well as the one-shot path.
"""
import pytest

from . import launch

ENV = {"HCCL_BUFFSIZE": "1"}


def _check(nranks, quick):
    r = launch("matrix.py", nranks, ["quick"] if quick else [], env=ENV, timeout=600)
    assert r.returncodes == [0] * nranks, r.explain()
    results = [r.results(i)[-1] for i in range(nranks)]
    for res in results:
        assert res["checks"] > 500, res
        assert res["nfail"] == 0, "\n".join(res["failures"])
    # Every rank received bitwise-identical all_reduce results.
    assert all(res["digests"] == results[0]["digests"] for res in results)


@pytest.mark.timeout(600)
@pytest.mark.parametrize("nranks", [1, 2, 3, 4])
def test_matrix(nranks):
    _check(nranks, quick=True)


@pytest.mark.slow
@pytest.mark.timeout(1200)
@pytest.mark.parametrize("nranks", [2, 4])
def test_matrix_full_sizes(nranks):
    _check(nranks, quick=False)


@pytest.mark.timeout(600)
@pytest.mark.parametrize("hosts", [["hA", "hA", "hB", "hB"], ["hA", "hB", "hA", "hB"]], ids=["blocked", "interleaved"])
def test_two_simulated_hosts(hosts):
    """NPUDIST_HOSTNAME splits the ranks over two "hosts": shared memory within
    each, Gloo between the host leaders. Per-host rounding of float16/bfloat16
    partial sums is allowed for by a wider tolerance."""
    env = dict(ENV, MATRIX_TOL_SCALE="4")
    r = launch("matrix.py", 4, ["quick"], env=env, hosts=hosts, timeout=600)
    assert r.returncodes == [0] * 4, r.explain()
    results = [r.results(i)[-1] for i in range(4)]
    for res in results:
        assert res["nfail"] == 0, "\n".join(res["failures"])
    assert all(res["digests"] == results[0]["digests"] for res in results)
