"""DDP on npu with hccl, a few steps: its logging data's timings (the reducer's npu timer,
csrc/hccl/ddp_timer.cpp)."""
import torch
from common import RANK, Checker, init, report
from torch.nn.parallel import DistributedDataParallel as DDP

chk = Checker()
init()
torch.manual_seed(0)
model = DDP(torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.ReLU(), torch.nn.Linear(256, 8)).npu(),
            device_ids=[torch.npu.current_device()], bucket_cap_mb=0.01)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(4):
    x = torch.randn(32, 64, generator=torch.Generator().manual_seed(step * 10 + RANK)).npu()
    loss = model(x).square().mean()
    loss.backward()
    opt.step()
    opt.zero_grad()
data = model._get_ddp_logging_data()
keys = ("forward_compute_time", "backward_compute_time", "backward_comm_time", "backward_compute_comm_overlap_time",
        "avg_forward_compute_time", "avg_backward_compute_time", "avg_backward_comm_time")
report(kind="ddp", times={k: data.get(k) for k in keys}, device=str(data.get("device_ids")),
       backend=data.get("backend_name"))
chk.finish()
