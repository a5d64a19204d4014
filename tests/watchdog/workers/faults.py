"""Faults the watchdog must report: argv[1] selects the scenario (3 ranks).

never_joins      rank 2 never joins all_reduce #2 (injected: the test sets
                 NPUDIST_FAULT_INJECT=rank=2,collective=2,kind=hang); the others time out (3 s).
killed           rank 2 is SIGKILLed while it waits inside all_reduce #2.
wrong_collective rank 1 calls broadcast where the others call all_reduce (#2).
wrong_size       rank 1 passes 16 elements where the others pass 8 (#2).
slow             rank 1 arrives 100 ms late at each of 25 all_reduces (injected:
                 rank=1,kind=slow,delay_ms=100).
exec_timeout     as never_joins, with HCCL_EXEC_TIMEOUT=2 under a 60 s group timeout.
never_joins_2hosts as never_joins, with rank 2 on another (simulated) host.
stalled_watchdog (2 ranks) rank 0, which serves the store, stops (SIGSTOP) for 15 s:
                 rank 1's all_reduce times out, its watchdog blocks asking the other
                 ranks (through the store) to dump, and the heartbeat monitor
                 (TORCH_HCCL_HEARTBEAT_TIMEOUT_SEC=3) ends rank 1.

At the end of "slow" rank 0 dumps its flight recorder on SIGUSR1 and the others
through npudist.watchdog.dump_flight_recorder().

Each rank reports what it saw; ranks that the watchdog takes down report first.
"""
import datetime
import os
import signal
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                                "hccl", "workers"))
import torch
import torch.distributed as dist
from common import RANK, init, report

import npudist
import npudist.watchdog

scenario = sys.argv[1]
group_timeout = 60 if scenario in ("exec_timeout", "killed") else 3
init(timeout=datetime.timedelta(seconds=group_timeout))
x = torch.ones(8, device="npu")
dist.all_reduce(x)  # #1: the group works
torch.npu.synchronize()
t0 = time.monotonic()
err = None
try:
    if scenario in ("never_joins", "exec_timeout", "never_joins_2hosts"):
        dist.all_reduce(x)  # rank 2 never joins it (NPUDIST_FAULT_INJECT)
    elif scenario == "killed":
        # Large enough to take several protocol steps: rank 2 dies between two.
        big = torch.ones(4 << 20, device="npu")
        if RANK == 2:
            threading.Timer(0.5, lambda: os.kill(os.getpid(), signal.SIGKILL)).start()
        else:
            time.sleep(1.0)
        dist.all_reduce(big)
    elif scenario == "wrong_collective":
        if RANK == 1:
            dist.broadcast(x, src=0)
        else:
            dist.all_reduce(x)
    elif scenario == "wrong_size":
        dist.all_reduce(torch.ones(16 if RANK == 1 else 8, device="npu"))
    elif scenario == "slow":
        for _ in range(25):
            dist.all_reduce(x)  # rank 1 starts each 100 ms late (NPUDIST_FAULT_INJECT)
        time.sleep(1.5)  # let a straggler log line go out
        if RANK == 0:
            os.kill(os.getpid(), signal.SIGUSR1)
            time.sleep(0.5)  # the watchdog writes it within its 100 ms round
        else:
            npudist.watchdog.dump_flight_recorder()
    elif scenario == "stalled_watchdog":
        if RANK == 0:
            import subprocess
            subprocess.Popen(["sh", "-c", f"sleep 15; kill -CONT {os.getpid()}"])
            os.kill(os.getpid(), signal.SIGSTOP)
            os._exit(0)
        dist.all_reduce(x)
    torch.npu.synchronize()
except Exception as e:  # noqa: BLE001 - the error text is the result
    err = f"{type(e).__name__}: {e}"
stats = npudist._C._hccl_stats()["groups"][0]
report(rank=RANK, error=err, elapsed=time.monotonic() - t0, timeouts=stats["timeouts"],
       mismatches=stats["mismatches"], straggler=stats["straggler_score_s"],
       failed=sum(o["failed"] for o in stats["ops"].values()))
breaking = scenario in ("never_joins", "killed", "exec_timeout", "never_joins_2hosts", "stalled_watchdog")
if err and breaking and os.environ.get("TORCH_HCCL_ASYNC_ERROR_HANDLING", "3") in ("1", "3"):
    time.sleep(30)  # the watchdog takes the process down before this ends
    report(rank=RANK, survived=True)
    os._exit(0)
if scenario in ("wrong_collective", "wrong_size"):
    # A mismatch leaves the group usable.
    y = torch.ones(4, device="npu")
    dist.all_reduce(y)
    torch.npu.synchronize()
    report(rank=RANK, after=float(y[0]))
time.sleep(1.5)  # dumps requested by other ranks are written within a second
os._exit(0)
