"""Two real hosts on one machine (npudist.testing.netns): network, mount and UTS namespaces
joined by a veth pair, distinct hostnames, no NPUDIST_HOSTNAME, each with its own /dev/shm.
npurun runs FSDP2 training (examples/train_gpt.py) across them with c10d rendezvous; one host
is then lost mid-step. Full tier (a run takes a minute or more); needs root."""
import os
import re
import time

import pytest

from npudist.testing import netns

from . import two_hosts

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(netns.unavailable_reason() is not None,
                                 reason=f"two-host tier: {netns.unavailable_reason()}")]


def wait_for(path, procs, timeout):
    t0 = time.monotonic()
    while not os.path.exists(path):
        assert time.monotonic() - t0 < timeout, f"{path} did not appear within {timeout} s"
        assert all(p.poll() is None for p in procs), [p.returncode for p in procs]
        time.sleep(0.1)


def read(path):
    with open(path) as f:
        return f.read()


@pytest.mark.timeout(900)
def test_losing_a_host_mid_step_then_resuming(tmp_path):
    ckpt = tmp_path / "ckpt"
    args = two_hosts.MODEL + ["--steps", "12", "--ckpt-every", "4", "--log-every", "2", "--step-delay", "0.3",
                              "--ckpt-dir", str(ckpt)]
    with netns.TwoHosts(tmp_path / "hosts") as hosts:
        logs = [tmp_path / f"{h.name}-1.log" for h in hosts.hosts]
        procs = [two_hosts.start(hosts, i, logs[i], args, rdzv_id="first") for i in range(2)]
        wait_for(ckpt / "step_0000004" / ".metadata", procs, timeout=400)
        time.sleep(0.5)  # into the next steps
        t_kill = time.monotonic()
        killed = hosts.kill_host(1)  # hostb: its npurun and both its ranks
        assert len(killed) >= 3, killed
        procs[0].wait(timeout=240)
        took = time.monotonic() - t_kill
        out = read(logs[0])
        assert procs[1].wait(timeout=10) == -9
        assert procs[0].returncode != 0, out
        assert took < 120, (took, out)  # far below the 10-minute group timeout
        # The survivors name the host and the ranks they lost.
        assert re.search(r"the connection to host 'hostb' \(10\.213\.\d+\.2\) broke: rank\(s\) \[2, 3\] of this "
                         r"group are lost", out), out
        assert "npurun: job FAILED" in out, out
        time.sleep(1)
        assert hosts.pids(0) == [] and hosts.pids(1) == []  # no orphans on either host
        assert hosts.shm_entries(0) == [] and hosts.shm_entries(1) == []  # nothing leaked in /dev/shm

        # Relaunch on both hosts: the job resumes from its last checkpoint.
        logs = [tmp_path / f"{h.name}-2.log" for h in hosts.hosts]
        procs = [two_hosts.start(hosts, i, logs[i], args, rdzv_id="second") for i in range(2)]
        codes = [p.wait(timeout=400) for p in procs]
        out = read(logs[0])
        assert codes == [0, 0], (codes, out, read(logs[1]))
        m = re.search(r"resumed from \S+step_(\d+) at step (\d+)", out)
        assert m and 4 <= int(m.group(2)) < 12, out
        assert "done: 12 steps" in out, out
        assert hosts.shm_entries(0) == [] and hosts.shm_entries(1) == []
