"""A real Prometheus scrapes a running 2-rank npurun job through npurun's node endpoint; its
HTTP API must return our series, every query of the Grafana dashboard must evaluate (and those
that should have data must have it), and a rank that dies must show as down with its exit code.

The tests of this module share one Prometheus and one job (module fixture) and run in order.
Prometheus is Debian's package (``./run.sh test`` installs it); without the binary the tests
fail with the install command.
"""
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.parse
import urllib.request

import pytest

import npudist
from npudist.testing.multiproc import free_port
from npudist.testing.npurun import NPURUN, npurun_env

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
WORKER = os.path.join(REPO, "tests", "watchdog", "workers", "train_loop.py")
DASHBOARD = os.path.join(REPO, "docs", "grafana", "npudist-dashboard.json")
ALERTS = os.path.join(REPO, "docs", "grafana", "alerts.yml")
INSTALL = "apt-get update && apt-get install -y --no-install-recommends prometheus"
HOST = "promhost-a"
SCRAPE_S = 3  # scrape interval (and timeout: a loaded machine can need seconds); $__rate_interval = 10 of them
RATE_WINDOW = f"{10 * SCRAPE_S}s"
WAIT_S = 180  # generous: ranks start slowly on a loaded 2-core machine
HAS_HCCL_STATS = hasattr(npudist._C, "_hccl_stats")


class Setup:
    """The running Prometheus and npurun job, and helpers to query the former."""

    def __init__(self, prom_port, node_port, outdir, npurun, prom, npurun_log, prom_log):
        self.prom_port, self.node_port, self.outdir = prom_port, node_port, outdir
        self.npurun, self.prom, self.npurun_log, self.prom_log = npurun, prom, npurun_log, prom_log

    def api(self, path):
        with urllib.request.urlopen(f"http://127.0.0.1:{self.prom_port}/api/v1/{path}", timeout=30) as r:
            body = json.load(r)
        assert body["status"] == "success", (path, body)
        return body["data"]

    def query(self, promql):
        """Instant query; returns data.result (raises with Prometheus' error text on failure)."""
        url = f"http://127.0.0.1:{self.prom_port}/api/v1/query?" + urllib.parse.urlencode({"query": promql})
        try:
            with urllib.request.urlopen(url, timeout=30) as r:
                body = json.load(r)
        except urllib.error.HTTPError as e:
            raise AssertionError(f"Prometheus rejected {promql!r}: {e.read().decode(errors='replace')}") from None
        assert body["status"] == "success", (promql, body)
        return body["data"]["result"]

    def wait_for(self, promql, check, what, timeout=WAIT_S):
        """Queries until ``check(result)`` holds; fails with the last result and the logs."""
        deadline = time.monotonic() + timeout
        result = None
        while time.monotonic() < deadline:
            result = self.query(promql)
            if check(result):
                return result
            if self.npurun.poll() is not None and "exit_code" not in promql and "rank_up" not in promql:
                break
            time.sleep(1)
        raise AssertionError(f"{what}: {promql!r} gave {result!r} within {timeout} s\n{self.explain()}")

    def explain(self):
        tail = lambda path: open(path, errors="replace").read()[-4000:] if os.path.exists(path) else ""  # noqa: E731  (a local one-line callable)
        try:
            targets = [(t["health"], t["lastError"], t["lastScrapeDuration"])
                       for t in self.api("targets")["activeTargets"]]
        except Exception as e:  # noqa: BLE001  (diagnostics only)
            targets = repr(e)
        return (f"--- scrape target (health, last error, duration): {targets}\n"
                f"--- npurun (exit {self.npurun.poll()})\n{tail(self.npurun_log)}\n"
                f"--- prometheus\n{tail(self.prom_log)[-1500:]}")


def _by_rank(result):
    return {r["metric"].get("rank"): r for r in result}


def _wait_ready(s, timeout=60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if s.prom.poll() is not None:
            break
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{s.prom_port}/-/ready", timeout=5) as r:
                if r.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.3)
    pytest.fail(f"prometheus did not become ready within {timeout} s\n{s.explain()}")


@pytest.fixture(scope="module")
def setup():
    prom_bin = shutil.which("prometheus")
    if prom_bin is None:
        pytest.fail(f"the prometheus binary is not installed; install it with: {INSTALL} "
                    f"(./run.sh test does this when it may)")
    work = tempfile.mkdtemp(prefix="npudist-prom-test-")
    outdir = os.path.join(work, "job")
    os.makedirs(outdir)
    prom_port, node_port = free_port(), free_port()
    with open(os.path.join(work, "prom.yml"), "w") as f:
        f.write(f"global:\n  scrape_interval: {SCRAPE_S}s\n  scrape_timeout: {SCRAPE_S}s\n"
                f"  evaluation_interval: {SCRAPE_S}s\nrule_files: ['{ALERTS}']\n"
                f"scrape_configs:\n  - job_name: npudist\n    static_configs:\n"
                f"      - targets: ['127.0.0.1:{node_port}']\n")
    prom_log, npurun_log = os.path.join(work, "prometheus.log"), os.path.join(work, "npurun.log")
    prom = subprocess.Popen([prom_bin, f"--config.file={work}/prom.yml", f"--storage.tsdb.path={work}/data",
                             f"--web.listen-address=127.0.0.1:{prom_port}"],
                            stdout=open(prom_log, "w"), stderr=subprocess.STDOUT)
    env = npurun_env({"NPUDIST_HOSTNAME": HOST, "TMPDIR": work})
    npurun = subprocess.Popen([*NPURUN, "--nproc", "2", "--metrics-port", str(node_port),
                               "--metrics-linger", "300", WORKER, outdir],
                              stdout=open(npurun_log, "w"), stderr=subprocess.STDOUT, env=env, cwd=REPO)
    s = Setup(prom_port, node_port, outdir, npurun, prom, npurun_log, prom_log)
    try:
        _wait_ready(s)
        yield s
    finally:
        for p in (npurun, prom):
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in (npurun, prom):
            try:
                p.wait(timeout=60)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        shutil.rmtree(work, ignore_errors=True)


def _n(count):
    return lambda r: len(r) == count


def _at_least(count):
    return lambda r: len(r) >= count


@pytest.mark.timeout(400)
def test_series_reach_prometheus(setup):
    # each check waits a little: a scrape that missed a rank (a slow fetch) makes its series stale for a moment
    expect = lambda q, check, what="": setup.wait_for(q, check, what or q, timeout=60)  # noqa: E731  (a local one-line callable)
    steps = setup.wait_for('npudist_train_steps_total{job="npudist"} > 20', _n(2), "both ranks' record_step counters")
    ranks = _by_rank(steps)
    assert set(ranks) == {"0", "1"}
    for rank, r in ranks.items():
        assert r["metric"]["local_rank"] == rank and r["metric"]["host"] == HOST, r
        assert r["metric"]["instance"] == f"127.0.0.1:{setup.node_port}"
    expect('up{job="npudist"} == 1', _n(1))
    # record_step-derived series
    expect(f"rate(npudist_train_tokens_total[{RATE_WINDOW}]) > 0", _n(2))
    expect('npudist_train_step_seconds_bucket{le="+Inf"} > 0', _n(2))
    expect("npudist_train_last_step_seconds > 0", _n(2))
    expect("npudist_train_tokens_per_second > 0", _n(2))
    # npu memory: each rank holds > 4 MiB on its own npu
    mem = _by_rank(expect("npudist_npu_memory_allocated_bytes >= 4194304", _n(2)))
    assert {r: m["metric"]["device"] for r, m in mem.items()} == {"0": "npu:0", "1": "npu:1"}
    expect("npudist_npu_memory_reserved_bytes >= npudist_npu_memory_allocated_bytes", _n(2))
    expect("npudist_npu_memory_fragmentation_ratio >= 0 <= 1", _n(2))
    expect("npudist_npu_memory_peak_allocated_bytes >= 4194304", _n(2))
    # process and npurun's own series
    expect("npudist_process_cpu_seconds_total > 0", _n(2))
    expect("npudist_process_resident_memory_bytes > 10e6", _n(2))
    up = _by_rank(expect(f'npudist_rank_up{{host="{HOST}"}} == 1', _n(2)))
    assert {r: m["metric"]["local_rank"] for r, m in up.items()} == {"0": "0", "1": "1"}
    expect("npudist_rank_metrics_up == 1", _n(2))
    expect("npudist_npurun_restarts == 0", _n(1))
    assert not setup.query("npudist_rank_exit_code")  # nobody ended yet


@pytest.mark.timeout(400)
def test_hccl_series_reach_prometheus(setup):
    assert HAS_HCCL_STATS, "npudist._C has no _hccl_stats: an old build; run ./run.sh build"
    expect = lambda q, check, what="": setup.wait_for(q, check, what or q, timeout=60)  # noqa: E731  (a local one-line callable)
    done = setup.wait_for('npudist_hccl_collectives_completed_total{op="all_reduce", pg_desc="default_pg"} > 10',
                          _n(2), "hccl all_reduce counters")
    assert {r["metric"]["rank"] for r in done} == {"0", "1"}
    for r in done:
        assert r["metric"]["host"] == HOST and r["metric"]["pg"]
    # every completed all_reduce moved 4096 float32 = 16 KiB
    ratio = expect('npudist_hccl_bytes_total{op="all_reduce"} / npudist_hccl_collectives_completed_total', _n(2))
    assert {float(r["value"][1]) for r in ratio} == {16384.0}
    expect('npudist_hccl_collectives_completed_total{op="all_gather"} > 0', _n(2))
    expect('npudist_hccl_collective_latency_seconds_count{op="all_reduce"} > 0', _n(2))
    expect('npudist_hccl_collective_latency_seconds_bucket{op="all_reduce", le="+Inf"} > 0', _n(2))
    expect('npudist_hccl_collectives_failed_total{op="all_reduce"} == 0', _n(2))
    expect('npudist_hccl_timeouts_total{pg_desc="default_pg"} == 0', _n(2))
    expect('npudist_hccl_mismatches_total{pg_desc="default_pg"} == 0', _n(2))
    expect('npudist_hccl_straggler_score_seconds{pg_desc="default_pg"} >= 0', _n(2))
    expect('npudist_hccl_collectives_in_flight{pg_desc="default_pg"} >= 0', _n(2))
    expect('npudist_hccl_group_info{group_size="2", pg_desc="default_pg"}', _n(2))
    expect(f'rate(npudist_hccl_bus_bytes_total{{op="all_reduce"}}[{RATE_WINDOW}]) > 0', _n(2))
    expect("npudist_hccl_flight_recorder_entries > 0", _n(2))


def _dashboard_queries():
    with open(DASHBOARD) as f:
        dash = json.load(f)
    out = []
    for panel in dash["panels"]:
        for t in panel.get("targets", []):
            out.append((panel["title"], t["refId"], t["expr"]))
    variables = [v for v in dash["templating"]["list"] if v["type"] == "query"]
    return dash, out, variables


def _concrete(expr):
    """The PromQL Grafana would send with every host and rank selected."""
    expr = expr.replace("$__rate_interval", RATE_WINDOW)
    expr = expr.replace('"$host"', '".*"').replace('"$rank"', '".*"')
    assert "$" not in expr, f"unsubstituted variable in {expr!r}"
    return expr


def _may_be_empty(expr):
    return "npudist_rank_exit_code" in expr  # no rank ended yet


@pytest.mark.timeout(400)
def test_dashboard_queries(setup):
    dash, queries, variables = _dashboard_queries()
    assert len(queries) >= 25 and dash["uid"]
    # rates need two scrapes inside the window
    setup.wait_for(f"rate(npudist_process_cpu_seconds_total[{RATE_WINDOW}])", lambda r: len(r) == 2,
                   "a rate over two scrapes")
    setup.wait_for(f"rate(npudist_hccl_collectives_completed_total[{RATE_WINDOW}]) > 0", lambda r: len(r) >= 2,
                   "hccl rates")
    empty = []
    for title, ref, expr in queries:
        result = setup.query(_concrete(expr))  # raises on a PromQL error
        if not result and not _may_be_empty(expr):
            try:  # a scrape that missed a rank makes its series stale for a moment
                setup.wait_for(_concrete(expr), bool, title, timeout=30)
            except AssertionError:
                empty.append(f"{title} / {ref}: {expr}")
    assert not empty, "dashboard queries without data:\n" + "\n".join(empty)
    # template variables: label_values(METRIC{...}, LABEL) must find the label
    for v in variables:
        m = re.fullmatch(r"label_values\((.+), (\w+)\)", v["definition"])
        assert m, v["definition"]
        result = setup.query(_concrete(m.group(1).replace("$host", ".*")))
        values = {r["metric"].get(m.group(2)) for r in result}
        assert values and None not in values, (v["name"], result)


@pytest.mark.timeout(400)
def test_example_alert_rules_evaluate(setup):
    """docs/grafana/alerts.yml: every rule evaluates without error against the job's series."""
    deadline = time.monotonic() + 60
    while True:
        rules = [r for g in setup.api("rules")["groups"] for r in g["rules"]]
        if rules and all(r.get("lastEvaluation", "").startswith("20") for r in rules) or time.monotonic() > deadline:
            break
        time.sleep(1)
    assert len(rules) == 8
    bad = [(r["name"], r.get("health"), r.get("lastError")) for r in rules if r.get("health") != "ok"]
    assert not bad, bad
    assert not [a for a in setup.api("alerts")["alerts"] if a["labels"]["alertname"] != "NpudistStraggler"], \
        "a healthy job raises no alert"


@pytest.mark.timeout(400)
def test_dead_rank_shows_down_with_exit_code(setup):
    with open(os.path.join(setup.outdir, "exit-1"), "w") as f:
        f.write("7")
    setup.wait_for(f'npudist_rank_exit_code{{rank="1", host="{HOST}"}} == 7', lambda r: len(r) == 1,
                   "rank 1's exit code")
    down = setup.wait_for('npudist_rank_up{rank="1"} == 0', lambda r: len(r) == 1, "rank 1 down")
    assert down[0]["metric"]["local_rank"] == "1"
    # rank 0 was stopped by the agent when rank 1 failed: down too
    setup.wait_for('npudist_rank_up{rank="0"} == 0', lambda r: len(r) == 1, "rank 0 down")
    # the example alert is pending (it fires after 1 min down)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        alerts = [a for a in setup.api("alerts")["alerts"] if a["labels"]["alertname"] == "NpudistRankDown"]
        if {a["labels"]["rank"] for a in alerts} == {"0", "1"}:
            break
        time.sleep(1)
    assert {a["labels"]["rank"] for a in alerts} == {"0", "1"}, alerts
    assert setup.npurun.poll() is None, "npurun should linger (--metrics-linger) " + setup.explain()
    setup.npurun.send_signal(signal.SIGTERM)  # ends the linger
    code = setup.npurun.wait(timeout=60)
    log = open(setup.npurun_log, errors="replace").read()
    assert code != 0 and "exit code 7" in log, setup.explain()
