"""npudist.watchdog is the watchdog's Python face, the Prometheus export is npudist.watchdog.metrics,
and the old names keep working for one release with a DeprecationWarning."""
import subprocess
import sys

OLD = r"""
import warnings
warnings.simplefilter("always")
import npudist.watchdog as wd, npudist.watchdog.metrics as m
from npudist.watchdog.metrics import steps
with warnings.catch_warnings(record=True) as w:
    import npudist.watchdog.server as old_server, npudist.watchdog.steps as old_steps
    from npudist.watchdog import announce, autostart, families, hccl_collector, labels, memory_collector
    from npudist.watchdog import process_collector, process_registry, train_collector
    rs, reg = wd.record_step, wd.registry
msgs = sorted(str(x.message).split()[0] for x in w if issubclass(x.category, DeprecationWarning))
print("RESULT", len(msgs), msgs[:2], old_steps is steps, old_server is m.server, rs is m.record_step,
      reg() is m.registry(), announce.__name__, callable(wd.watchdog_status), callable(wd.dump_flight_recorder))
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
    """One fresh interpreter: watchdog_status() before and after a 1-rank hccl group ran three
    all_reduce; then the deprecated names, which warn and are the new modules themselves."""
    from npudist.testing.multiproc import clean_env, free_port

    r = subprocess.run([sys.executable, "-c", STATUS + OLD], capture_output=True, text=True, timeout=180,
                       env=clean_env({"PORT": str(free_port())}))
    assert r.returncode == 0, r.stderr
    status, old = [x for x in r.stdout.splitlines() if x.startswith("RESULT")]
    assert status == ("RESULT [] ['flight_recorder_entries', 'groups', 'watchdog_heartbeat_age_s'] default_pg 0 1 0 0 "
                      "0.0 True []"), status + r.stderr
    assert old == ("RESULT 13 ['npudist.watchdog.announce', 'npudist.watchdog.autostart'] True True True True "
                   "npudist.watchdog.metrics.announce True True"), old
