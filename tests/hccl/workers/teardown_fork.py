"""A forked child of a process with live hccl groups: it exits through atexit
(the shutdown of npudist's threads), which must not join the parent's threads.

Standalone (not run_on_ranks): npudist.testing.rank.prepare arms faulthandler.dump_traceback_later, and a child
forked while that is armed hangs in CPython's own finalization (faulthandler's watchdog
thread exists only in the parent), which is not what this test is about."""
import os
import sys
import time

import torch
import torch.distributed as dist
from teardown_job import our_threads

import npudist  # noqa: F401  (registers npu when torch's backend autoload is off)
from npudist.testing.checks import report

torch.npu.set_device(0)
dist.init_process_group("hccl", device_id=torch.device("npu", 0))
t = torch.ones(4, device="npu")
dist.all_reduce(t, async_op=True).wait()  # the group's stream worker has run
torch.npu.synchronize()
t0 = time.monotonic()
path = f"/tmp/teardown_fork_{os.getpid()}.txt"
pid = os.fork()
if pid == 0:
    # The child: npu is unusable here (bad fork); leave by the normal path so atexit runs.
    with open(path, "w") as f:
        f.write(",".join(our_threads()))
    sys.exit(0)
_, status = os.waitpid(pid, 0)
child_seconds = time.monotonic() - t0
with open(path) as f:
    threads_in_child = [n for n in f.read().split(",") if n]
os.unlink(path)
t2 = torch.ones(1, device="npu")
dist.all_reduce(t2)
report(child_exit=os.waitstatus_to_exitcode(status), child_seconds=child_seconds, after_fork_sum=t2.item(),
       threads_in_child=threads_in_child)
dist.destroy_process_group()
