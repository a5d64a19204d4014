"""all_gather / reduce_scatter with a list of tensors of different sizes (one per rank), which
ProcessGroupNCCL runs as coalesced broadcasts / reduces (found by trying hccl as a PyTorch user)."""
import torch
import torch.distributed as dist
from common import RANK, WORLD, init, report

init()
dev = torch.device("npu", torch.npu.current_device())
for name in ("all_gather", "reduce_scatter"):
    err, ok = None, False
    try:
        if name == "all_gather":
            outs = [torch.empty(r + 1, device=dev) for r in range(WORLD)]
            dist.all_gather(outs, torch.full((RANK + 1,), float(RANK), device=dev))
            ok = [o.tolist() for o in outs] == [[float(r)] * (r + 1) for r in range(WORLD)]
        else:
            out = torch.empty(RANK + 1, device=dev)
            dist.reduce_scatter(out, [torch.full((r + 1,), float(RANK + 1), device=dev) for r in range(WORLD)])
            ok = out.tolist() == [float(sum(range(1, WORLD + 1)))] * (RANK + 1)
        torch.npu.synchronize()
    except Exception as e:  # noqa: BLE001 - the error is the result
        err = f"{type(e).__name__}: {e}"
    report(case=name, error=err, ok=ok)
dist.destroy_process_group()
