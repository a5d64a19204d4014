"""Sub-groups on 4 ranks: new_group, split_group, DeviceMesh 1-D and 2-D,
functional collectives, and the backend's locality report."""
import torch
import torch.distributed as dist
import torch.distributed._functional_collectives as funcol
from common import RANK, WORLD, Checker, init, report
from torch.distributed.device_mesh import init_device_mesh

chk = Checker()
init()
backend = dist.group.WORLD._get_backend(torch.device("npu"))
report(kind="topology", hosts=list(backend.hosts), local_ranks=list(backend.local_ranks),
       default_backend=dist.get_default_backend_for_device("npu"),
       cpu_default_backend=dist.get_default_backend_for_device("cpu"))

# new_group: evens and odds (every rank calls new_group for both)
evens, odds = dist.new_group([0, 2]), dist.new_group([1, 3])
mine = evens if RANK % 2 == 0 else odds
x = torch.full((5,), float(RANK), device="npu")
chk.run("new_group all_reduce", lambda: dist.all_reduce(x, group=mine))
chk.close(x, torch.full((5,), float(2 + 2 * (RANK % 2))), "new_group all_reduce")
# the world group still works and is not confused by the sub-group
y = torch.ones(3, device="npu")
dist.all_reduce(y)
chk.close(y, torch.full((3,), float(WORLD)), "world after new_group")

# split_group
def split():
    g = dist.split_group(split_ranks=[[0, 1], [2, 3]])
    z = torch.full((4,), float(RANK), device="npu")
    dist.all_reduce(z, group=g)
    chk.close(z, torch.full((4,), float(1 if RANK < 2 else 5)), "split_group all_reduce")
chk.run("split_group", split)

# DeviceMesh 1-D and 2-D
mesh1 = init_device_mesh("npu", (WORLD,))
t = torch.full((2,), float(RANK + 1), device="npu")
dist.all_reduce(t, group=mesh1.get_group())
chk.close(t, torch.full((2,), float(sum(range(1, WORLD + 1)))), "mesh 1-D")
mesh2 = init_device_mesh("npu", (2, 2), mesh_dim_names=("dp", "tp"))
for dim in ("dp", "tp"):
    g = mesh2.get_group(dim)
    ranks = dist.get_process_group_ranks(g)
    v = torch.full((3,), float(RANK), device="npu")
    dist.all_reduce(v, group=g)
    chk.close(v, torch.full((3,), float(sum(ranks))), f"mesh 2-D {dim} all_reduce")
    # functional collectives (what DTensor uses)
    w = torch.full((2,), float(RANK), device="npu")
    ag = funcol.all_gather_tensor(w, 0, (mesh2, mesh2.mesh_dim_names.index(dim)))
    chk.close(ag.wait() if hasattr(ag, "wait") else ag, torch.cat([torch.full((2,), float(r)) for r in ranks]),
              f"funcol all_gather {dim}")
    rs = funcol.reduce_scatter_tensor(torch.arange(4, dtype=torch.float32, device="npu") + RANK, "sum", 0,
                                      (mesh2, mesh2.mesh_dim_names.index(dim)))
    full = sum(torch.arange(4, dtype=torch.float32) + r for r in ranks)
    me = ranks.index(RANK)
    chk.close(rs, full.chunk(2)[me], f"funcol reduce_scatter {dim}")
    ar = funcol.all_reduce(torch.ones(3, device="npu"), "sum", (mesh2, mesh2.mesh_dim_names.index(dim)))
    chk.close(ar, torch.full((3,), 2.0), f"funcol all_reduce {dim}")
torch.npu.synchronize()
chk.report()
dist.destroy_process_group()
