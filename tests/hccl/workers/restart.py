"""Run by npurun --max-restarts 1: rank 1 fails in the first attempt while rank 0
is inside a collective; the second attempt must set up its groups afresh in the
store (a fresh one, or the agent's with keys carrying TORCHELASTIC_RESTART_COUNT) and succeed."""
import os
import sys

import torch
import torch.distributed as dist

import npudist  # noqa: F401  (registers npu and hccl when torch's backend autoload is off)

rank = int(os.environ["RANK"])
torch.npu.set_device(int(os.environ["LOCAL_RANK"]))
dist.init_process_group("hccl", device_id=torch.device("npu", int(os.environ["LOCAL_RANK"])))
x = torch.ones(4, device="npu")
dist.all_reduce(x)
torch.npu.synchronize()
if os.environ.get("TORCHELASTIC_RESTART_COUNT") == "0" and rank == 1:
    sys.exit(3)
dist.all_reduce(x)
torch.npu.synchronize()
print("attempt", os.environ.get("TORCHELASTIC_RESTART_COUNT"), "ok", x[0].item(), flush=True)
dist.destroy_process_group()
