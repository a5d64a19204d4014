"""Consistency of the metrics' documentation and the Grafana dashboard with the collectors."""
import json
import os
import re
import shutil
import subprocess

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from npudist.watchdog.metrics.hccl_collector import HcclCollector
from npudist.watchdog.metrics.process_collector import ProcessCollector
from npudist.watchdog.metrics.steps import StepStats
from npudist.watchdog.metrics.train_collector import TrainCollector

from .test_collectors import _stats

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DOC = open(os.path.join(REPO, "docs", "metrics.md")).read()
DASHBOARD = json.load(open(os.path.join(REPO, "docs", "grafana", "npudist-dashboard.json")))
# exported by the memory collector (needs an initialised npu) and by npurun's node endpoint
OTHERS = {"npudist_npu_memory_allocated_bytes", "npudist_npu_memory_reserved_bytes",
          "npudist_npu_memory_peak_allocated_bytes", "npudist_npu_memory_peak_reserved_bytes",
          "npudist_npu_memory_inactive_split_bytes", "npudist_npu_memory_fragmentation_ratio",
          "npudist_npu_memory_ooms_total", "npudist_npu_memory_alloc_retries_total",
          "npudist_rank_up", "npudist_rank_exit_code", "npudist_rank_metrics_up", "npudist_npurun_restarts"}


def _exported():
    stats = StepStats()
    stats.record(0.1, 1)
    reg = CollectorRegistry(auto_describe=False)
    for c in (TrainCollector(stats), HcclCollector(source=lambda: _stats([1e-6, 1e-5, 1e-4, 1e-3, 1e-2])),
              ProcessCollector()):
        reg.register(c)
    names = set()
    for fam in text_string_to_metric_families(generate_latest(reg).decode()):
        names.add(fam.name + ("_total" if fam.type == "counter" else ""))
    return names | OTHERS


def test_every_metric_is_documented_with_its_type():
    documented = dict(re.findall(r"^\| `(npudist_\w+)` \| (counter|gauge|histogram)", DOC, re.M))
    exported = _exported()
    assert exported - set(documented) == set(), "undocumented metrics"
    assert set(documented) - exported == set(), "documented metrics nobody exports"
    for name, kind in documented.items():
        assert name.endswith("_total") == (kind == "counter"), name  # Prometheus naming


def test_dashboard_uses_only_exported_metrics_and_is_well_formed():
    exported = _exported()
    ids, used = set(), set()
    for panel in DASHBOARD["panels"]:
        assert panel["id"] not in ids
        ids.add(panel["id"])
        g = panel["gridPos"]
        assert g["x"] >= 0 and g["x"] + g["w"] <= 24 and g["h"] > 0
        if panel["type"] == "row":
            continue
        refs = [t["refId"] for t in panel["targets"]]
        assert len(refs) == len(set(refs)) and refs, panel["title"]
        for t in panel["targets"]:
            assert t["datasource"]["uid"] == "${datasource}"
            for name in re.findall(r"\bnpudist_\w+", t["expr"]):
                used.add(re.sub(r"_(bucket|sum|count)$", "", name))
    histograms = {"npudist_train_step_seconds", "npudist_hccl_collective_latency_seconds"}
    assert used - exported - histograms == set(), "dashboard queries unknown metrics"
    # every metric has a panel
    assert exported - used == set(), "metrics without a dashboard panel"


def test_example_prometheus_config_and_rules_are_valid():
    promtool = shutil.which("promtool")
    assert promtool, ("promtool (Debian package prometheus) is not installed; install it with: apt-get update && "
                      "apt-get install -y --no-install-recommends prometheus (./run.sh test does this when it may)")
    r = subprocess.run([promtool, "check", "config", os.path.join(REPO, "docs", "grafana", "prometheus.yml")],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "8 rules found" in r.stdout + r.stderr
