"""One rank of the dumps-on-every-exit-path test, run by npurun: all_reduces with a short group
timeout (argv[1] s) until one fails; rank 1 skips the second one (it sleeps instead, until the
launcher stops it). argv[2] "raise": the failure reaches the main thread as an exception that
is not caught (the process exits 1); "catch": rank 0 catches it and waits, so the watchdog ends
the process (TORCH_HCCL_ASYNC_ERROR_HANDLING=3: SIGABRT)."""
import datetime
import os
import sys
import time

import torch
import torch.distributed as dist

import npudist  # noqa: F401  (registers npu and hccl)

rank = int(os.environ["RANK"])
torch.npu.set_device(int(os.environ["LOCAL_RANK"]))
dist.init_process_group("hccl", timeout=datetime.timedelta(seconds=float(sys.argv[1])),
                        device_id=torch.device("npu", torch.npu.current_device()))
x = torch.ones(8, device="npu")
for i in range(1, 6):
    if rank == 1 and i == 2:
        print("rank 1: skipping all_reduce #2", flush=True)
        time.sleep(300)
    try:
        dist.all_reduce(x)
        torch.npu.synchronize()
    except Exception as e:
        if sys.argv[2] == "raise":
            raise
        print(f"rank {rank}: caught {type(e).__name__}; waiting for the watchdog", flush=True)
        time.sleep(120)
    print(f"rank {rank}: all_reduce #{i} done", flush=True)
