"""One rank of a fault-injection test: argv[1] selects what the job does; the fault itself
comes from NPUDIST_FAULT_INJECT, set by the test. Each rank reports what it saw.

collectives N   N all_reduces of ones (group timeout argv[2] s), then a check of the sum
train N         N steps of a tiny model: all_reduce of the gradient, SGD step
allocs N        N npu allocations of 4 KiB
new_group S     sleeps S s, then makes a new hccl group (it talks through the store)
"""
import datetime
import os
import sys
import time

import torch
import torch.distributed as dist

import npudist
from npudist import fault_inject
from npudist.testing.checks import report

torch.set_num_threads(1)
RANK = int(os.environ["RANK"])
mode, n = sys.argv[1], float(sys.argv[2])
timeout = float(sys.argv[3]) if len(sys.argv) > 3 else 30
torch.npu.set_device(RANK % torch.npu.device_count())
dist.init_process_group("hccl", timeout=datetime.timedelta(seconds=timeout),
                        device_id=torch.device("npu", torch.npu.current_device()))
t0 = time.monotonic()
err, done = None, 0
try:
    if mode == "collectives":
        x = torch.ones(8, device="npu")
        for _i in range(int(n)):
            x.fill_(1)
            dist.all_reduce(x)
            torch.npu.synchronize()
            done += 1
        assert float(x[0]) == dist.get_world_size(), float(x[0])
    elif mode == "train":
        torch.manual_seed(0)
        model = torch.nn.Linear(16, 4).npu()
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for _i in range(int(n)):
            loss = model(torch.ones(2, 16, device="npu")).sum()
            loss.backward()
            for p in model.parameters():
                dist.all_reduce(p.grad)
            opt.step()
            opt.zero_grad()
            done += 1
        torch.npu.synchronize()
    elif mode == "allocs":
        before = fault_inject.counts()["allocations"]
        keep = []
        try:
            for _i in range(int(n)):
                keep.append(torch.empty(1024, device="npu"))
                done += 1
        except torch.OutOfMemoryError as e:
            err = f"OutOfMemoryError: {e}"
            report(rank=RANK, oom_at=before + done + 1, num_ooms=torch.npu.memory_stats()["num_ooms"],
                   is_oom_type=isinstance(e, torch.OutOfMemoryError))
    elif mode == "new_group":
        time.sleep(n)
        g = dist.new_group([0, 1])
        x = torch.ones(4, device="npu")
        dist.all_reduce(x, group=g)
        torch.npu.synchronize()
except Exception as e:  # noqa: BLE001 - the error text is the result
    err = f"{type(e).__name__}: {e}"
stats = npudist._C._hccl_stats()["groups"][0]
report(rank=RANK, error=err, done=done, elapsed=time.monotonic() - t0, counts=fault_inject.counts(),
       timeouts=stats["timeouts"], straggler=stats["straggler_score_s"])
if err is None:
    dist.destroy_process_group()
    sys.exit(0)
if os.environ.get("TORCH_HCCL_ASYNC_ERROR_HANDLING") in ("1", "3") and err.startswith("DistBackendError"):
    time.sleep(30)  # the watchdog takes the process down before this ends
    report(rank=RANK, survived=True)
os._exit(0)
