"""npudist.watchdog is the watchdog's Python face, the Prometheus export is npudist.watchdog.metrics;
the old alias paths (deprecated for one release) are gone."""

OLD = r"""
import importlib
import npudist.watchdog as wd, npudist.watchdog.metrics as m
gone = []
for name in ["announce", "autostart", "families", "hccl_collector", "labels", "memory_collector",
             "process_collector", "process_registry", "server", "steps", "train_collector"]:
    try:
        importlib.import_module("npudist.watchdog." + name)
    except ModuleNotFoundError:
        gone.append(name)
    importlib.import_module("npudist.watchdog.metrics." + name)  # the real module
attrs = [n for n in ("record_step", "start_http_server", "MetricsServer", "registry") if hasattr(wd, n)]
print("RESULT", len(gone), attrs, wd.metrics is m, callable(m.record_step), callable(wd.watchdog_status),
      callable(wd.dump_flight_recorder))
"""


STATUS = r"""
import os, torch, torch.distributed as dist
import npudist.watchdog as wd
before = wd.watchdog_status()
os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=os.environ["PORT"])
dist.init_process_group("hccl", rank=0, world_size=1, device_id=torch.device("npu", 0))
x = torch.ones(4, device="npu")
for _ in range(3):
    dist.all_reduce(x)
torch.npu.synchronize()
st = wd.watchdog_status()
(g,) = st["groups"]
print("RESULT", before["groups"], sorted(st), g["desc"], g["rank"], g["size"], g["in_flight"], g["timeouts"],
      g["straggler_score_s"], st["flight_recorder_entries"] >= 3, wd.stragglers())
dist.destroy_process_group()
"""


def test_status_of_one_process_and_old_paths():
    """One process of its own (forked from the warm test zygote): watchdog_status() before and after a 1-rank hccl group ran three
    all_reduce; then the removed alias paths, which no longer import (the metrics modules do)."""
    from npudist.testing.multiproc import free_port, run_python

    r = run_python(["-c", STATUS + OLD], env={"PORT": str(free_port())}, timeout=180)
    assert r.returncode == 0, r.stderr
    status, old = [x for x in r.stdout.splitlines() if x.startswith("RESULT")]
    assert status == ("RESULT [] ['flight_recorder_entries', 'groups', 'watchdog_heartbeat_age_s'] default_pg 0 1 0 0 "
                      "0.0 True []"), status + r.stderr
    assert old == "RESULT 11 [] True True True True", old
