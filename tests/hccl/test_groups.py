"""Sub-groups (new_group, split_group), DeviceMesh 1-D/2-D and functional
collectives on hccl, on one host and across two simulated hosts."""
import datetime
import os
import warnings

import pytest
import torch
import torch.distributed as dist
import torch.distributed._functional_collectives as funcol
from torch.distributed.device_mesh import init_device_mesh

from npudist.testing import rank as rank_setup
from npudist.testing.checks import report

from . import CPU_AND_NPU, Checker, run_ranks


def groups_on_rank():
    """Sub-groups on 4 ranks: new_group, split_group, DeviceMesh 1-D and 2-D,
    functional collectives, and the backend's locality report."""
    RANK, WORLD = dist.get_rank(), dist.get_world_size()
    chk = Checker()
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


def reinit_on_rank():
    """destroy_process_group + init_process_group again, several times, over one
    long-lived store (as under torchrun/npurun, whose agent store outlives groups)."""
    RANK, WORLD = rank_setup.rank(), rank_setup.world_size()  # no group yet: the rendezvous variables
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


def device_registration_on_rank():
    """Which devices a group created with hccl serves, on 2 ranks.

    "hccl" alone: npu only, as torch_npu registers it, so the group's default device is npu (object
    collectives, barrier) and a cpu tensor fails with c10d's own error; "cpu:hccl,npu:hccl" reaches
    hccl's cpu path; "cpu:gloo,npu:hccl" gives Gloo for cpu."""
    RANK, WORLD = dist.get_rank(), dist.get_world_size()
    chk = Checker()
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


@pytest.mark.timeout(300)
@pytest.mark.parametrize("hosts", [None, ["hA", "hA", "hB", "hB"]], ids=["one_host", "two_hosts"])
def test_groups_and_meshes(hosts):
    r = run_ranks(groups_on_rank, 4, hosts=hosts, timeout=240)
    assert r.returncodes == [0] * 4, r.explain()
    for rank in range(4):
        topo, res = r.results(rank)
        assert topo["default_backend"] == "hccl"
        assert topo["cpu_default_backend"] == "gloo"  # gloo stays PyTorch's default for cpu
        if hosts:
            assert topo["hosts"] == ["hA", "hB"]
            assert topo["local_ranks"] == ([0, 1] if rank < 2 else [2, 3])
        else:
            assert len(topo["hosts"]) == 1 and topo["local_ranks"] == [0, 1, 2, 3]
        assert res["nfail"] == 0, "\n".join(res["failures"])
        assert res["checks"] >= 14


@pytest.mark.timeout(200)
def test_reinit_over_a_persistent_store():
    r = run_ranks(reinit_on_rank, 3, backend=None, env={"HCCL_CONNECT_TIMEOUT": "20"}, timeout=150)
    assert r.returncodes == [0] * 3, r.explain()
    for rank in range(3):
        sums = r.results(rank)[-1]["sums"]
        assert [s[0] for s in sums] == [float(3 * it + 3) for it in range(3)], sums
        if rank < 2:
            assert [s[1] for s in sums] == [2.0] * 3


@pytest.mark.timeout(200)
def test_hccl_is_registered_for_npu_as_torch_npu_registers_it():
    r = run_ranks(device_registration_on_rank, 2, timeout=150)
    assert r.returncodes == [0] * 2, r.explain()
    for rank in range(2):
        res = {d.get("kind"): d for d in r.results(rank)}
        groups = {d["name"]: d for d in r.results(rank) if d.get("kind") == "group"}
        hccl = res["hccl"]
        assert hccl["capability"] == ["npu"] and hccl["devices"] == ["npu"], hccl
        # DCP asks for the default device; with cpu registered too, torch warned "Multiple backends ..." and chose cpu
        assert hccl["default_device"].startswith("npu") and hccl["coll_device"].startswith("npu"), hccl
        assert not [w for w in hccl["warnings"] if "Multiple backends" in w], hccl
        assert (hccl["npu_default"], hccl["cpu_default"]) == ("hccl", "gloo")
        assert "No backend type associated with device type cpu" in res["cpu_on_hccl"]["error"]
        assert groups["cpu:hccl,npu:hccl"]["cpu"] == groups["cpu:hccl,npu:hccl"]["npu"] == "ProcessGroupHCCL"
        assert (groups["cpu:gloo,npu:hccl"]["cpu"], groups["cpu:gloo,npu:hccl"]["npu"]) == (
            "ProcessGroupGloo", "ProcessGroupHCCL")
        assert r.results(rank)[-1]["nfail"] == 0, r.results(rank)[-1]["failures"]
