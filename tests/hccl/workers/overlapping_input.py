"""An all_reduce on a tensor whose elements overlap in memory (``expand`` gives stride 0): the
caller's error, then ordinary collectives for two seconds and a clean teardown (found by trying hccl as a PyTorch user;
run with the watchdog's default TORCH_HCCL_ASYNC_ERROR_HANDLING=3)."""
import time

import torch
import torch.distributed as dist
from common import RANK, WORLD, init, report

init()
dev = torch.device("npu", torch.npu.current_device())
err = None
try:
    dist.all_reduce(torch.ones(1, device=dev).expand(4))
    torch.npu.synchronize()
except Exception as e:  # noqa: BLE001 - the error is the result
    err = f"{type(e).__name__}: {e}"
report(case="overlap", error=err)
ok = True
deadline = time.monotonic() + 2.0
while time.monotonic() < deadline:
    x = torch.full((3,), float(RANK), device=dev)
    dist.all_reduce(x)
    ok = ok and x.tolist() == [float(sum(range(WORLD)))] * 3
    time.sleep(0.1)
dist.destroy_process_group()
report(case="after", ok=ok)
