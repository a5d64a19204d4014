"""destroy_process_group + init_process_group again, several times, over one
long-lived store (as under torchrun/npurun, whose agent store outlives groups)."""
import datetime
import os

import torch
import torch.distributed as dist
from common import RANK, WORLD, report

torch.npu.set_device(RANK)
store = dist.TCPStore(os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"]), WORLD, RANK == 0,
                      timeout=datetime.timedelta(seconds=60))
sums = []
for it in range(3):
    dist.init_process_group("hccl", store=store, rank=RANK, world_size=WORLD,
                            device_id=torch.device("npu", RANK))
    x = torch.full((4,), float(it + RANK), device="npu")
    dist.all_reduce(x)
    sub = dist.new_group([0, 1])
    y = torch.ones(2, device="npu")
    if RANK in (0, 1):
        dist.all_reduce(y, group=sub)
    sums.append([x[0].item(), y[0].item()])
    dist.destroy_process_group()
report(rank=RANK, sums=sums)
