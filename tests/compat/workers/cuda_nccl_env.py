"""A CUDA script that sets ProcessGroupNCCL's variables (TORCH_NCCL_BLOCKING_WAIT before its imports,
TORCH_NCCL_ASYNC_ERROR_HANDLING=0 — "keep the process, I handle the error" — just before
init_process_group) and then sees a collective time out: rank 1 never joins rank 0's all_reduce.
Reports what rank 0 caught and the TORCH_HCCL_* twins; rank 0 lives on past the point where the
watchdog's default (3: end the process) would have ended it."""
# The imports stand as a user's script has them (torch_npu's lines first): their order is the point.
# isort: skip_file
import os

os.environ["TORCH_NCCL_BLOCKING_WAIT"] = "1"
os.environ["TORCH_NCCL_DESYNC_DEBUG"] = "1"  # the test sets TORCH_HCCL_DESYNC_DEBUG=0: that one wins

import datetime
import json
import time

import torch
import torch_npu  # noqa: F401  (as a torch_npu script starts)
from torch_npu.contrib import transfer_to_npu  # noqa: F401  (turns the redirection on)
import torch.distributed as dist

rank = int(os.environ["RANK"])
torch.cuda.set_device(rank)
os.environ["TORCH_NCCL_ASYNC_ERROR_HANDLING"] = "0"
dist.init_process_group("nccl", timeout=datetime.timedelta(seconds=2))
err = None
if rank == 0:
    try:
        dist.all_reduce(torch.ones(4, device="cuda"))
        torch.cuda.synchronize()
    except Exception as e:  # noqa: BLE001 - the error is the result
        err = f"{type(e).__name__}: {e}"
    time.sleep(4)  # the watchdog's default would end the process within this
else:
    time.sleep(6)
env = {k: os.environ.get(k) for k in ("TORCH_HCCL_ASYNC_ERROR_HANDLING", "TORCH_HCCL_BLOCKING_WAIT",
                                      "TORCH_HCCL_DESYNC_DEBUG")}
print("RESULT " + json.dumps({"rank": rank, "error": err, "env": env}), flush=True)
os._exit(0)  # the group is broken: no destroy_process_group
