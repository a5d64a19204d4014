"""A forked child of a process with live hccl groups (issue #25): it exits through atexit
(the shutdown of npudist's threads), which must not join the parent's threads."""
import os
import time

import torch
import torch.distributed as dist

from common import init, report
from teardown_job import our_threads

init()
t = torch.ones(4, device="npu")
work = dist.all_reduce(t, async_op=True)  # the group's stream worker is busy or just done
work.wait()
torch.npu.synchronize()
t0 = time.monotonic()
pid = os.fork()
if pid == 0:
    # The child: npu is unusable here (bad fork); leave by the normal path so atexit runs.
    import sys

    sys.stdout.write("")
    threads = our_threads()
    with open(f"/tmp/teardown_fork_{os.getppid()}.txt", "w") as f:
        f.write(repr(threads))
    sys.exit(0)
_, status = os.waitpid(pid, 0)
child_seconds = time.monotonic() - t0
with open(f"/tmp/teardown_fork_{os.getpid()}.txt") as f:
    threads_in_child = eval(f.read())  # noqa: S307 - our own repr of a list of str
os.unlink(f"/tmp/teardown_fork_{os.getpid()}.txt")
t2 = torch.ones(1, device="npu")
dist.all_reduce(t2)
report(child_exit=os.waitstatus_to_exitcode(status), child_seconds=child_seconds, after_fork_sum=t2.item(),
       threads_in_child=threads_in_child)
dist.destroy_process_group()
