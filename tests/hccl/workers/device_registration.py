"""Which devices a group created with hccl serves, on 2 ranks.

"hccl" alone: npu only, as torch_npu registers it, so the group's default device is npu (object
collectives, barrier) and a cpu tensor fails with c10d's own error; "cpu:hccl,npu:hccl" reaches
hccl's cpu path; "cpu:gloo,npu:hccl" gives Gloo for cpu.
"""
import warnings

import torch
import torch.distributed as dist
from common import CPU_AND_NPU, RANK, WORLD, Checker, init, report

chk = Checker()
init()  # "hccl"
world = dist.group.WORLD
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    default_device = dist.distributed_c10d._get_pg_default_device(world)  # what DCP asks
    coll_device = dist.distributed_c10d._get_object_coll_device(world)
report(kind="hccl", devices=sorted(str(d) for d in world._device_types), default_device=str(default_device),
       coll_device=str(coll_device),
       warnings=[str(w.message) for w in caught], capability=dist.Backend.backend_capability["hccl"],
       npu_default=dist.get_default_backend_for_device("npu"), cpu_default=dist.get_default_backend_for_device("cpu"))

x = torch.full((3,), float(RANK + 1), device="npu")
dist.all_reduce(x)
chk.close(x.cpu(), torch.full((3,), float(sum(range(1, WORLD + 1)))), "npu all_reduce on hccl")
objs = [None] * WORLD
dist.all_gather_object(objs, {"rank": RANK})  # object collectives go through npu tensors
chk.true(objs == [{"rank": r} for r in range(WORLD)], "all_gather_object on hccl", str(objs))
dist.barrier()
try:
    dist.all_reduce(torch.ones(3))
    cpu_error = None
except RuntimeError as e:
    cpu_error = str(e)
report(kind="cpu_on_hccl", error=cpu_error)

for name in (CPU_AND_NPU, "cpu:gloo,npu:hccl"):
    g = dist.new_group(list(range(WORLD)), backend=name)
    c = torch.full((4,), float(RANK + 1))
    dist.all_reduce(c, group=g)
    chk.close(c, torch.full((4,), float(sum(range(1, WORLD + 1)))), f"cpu all_reduce on {name}")
    n = torch.full((4,), float(RANK + 1), device="npu")
    dist.all_reduce(n, group=g)
    chk.close(n.cpu(), torch.full((4,), float(sum(range(1, WORLD + 1)))), f"npu all_reduce on {name}")
    report(kind="group", name=name, cpu=type(g._get_backend(torch.device("cpu"))).__name__,
           npu=type(g._get_backend(torch.device("npu"))).__name__)

dist.destroy_process_group()
chk.finish()
