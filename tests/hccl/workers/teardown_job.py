"""The body of the teardown jobs (a job whose store host goes away; tests/hccl/test_teardown.py and the soak,
tests/hccl/teardown_soak.py), run in each rank: by teardown_spawn.py under
``torch.multiprocessing.start_processes(start_method="spawn")``, or directly under npurun
(``teardown_job.py MODE [SIZE]``, rank from the environment).

MODE:
  destroy    DeviceMesh, DTensor, gloo sub-group, FSDP2 backward, destroy_process_group; then
             checks that no hccl watchdog thread is left and that _shutdown_threads leaves no
             npudist thread at all (written to $TEARDOWN_OUT/rank<r>.json when set)
  nodestroy  the same, exits with every group alive
  inflight   the same, exits with async collectives still queued (no destroy)
  gloo       only a gloo sub-group beside hccl, then destroy
  raise      rank 1 raises after the backward (an exception in one rank; exit code 1 is expected)
"""
import json
import os
import sys
import time


def our_threads():
    names = []
    for tid in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{tid}/comm") as f:
                names.append(f.read().strip())
        except OSError:
            pass  # ended meanwhile
    return sorted(n for n in names if n.startswith(("hccl-", "npu-stream")))


def body(rank, world, mode, size=16, outdir=None):
    import torch
    import torch.distributed as dist
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard
    from torch.distributed.tensor import Shard, distribute_tensor

    import npudist  # noqa: F401  (registers npu when torch's backend autoload is off)

    torch.set_num_threads(1)
    dist.init_process_group("hccl")
    found = {"rank": rank, "mode": mode}
    gloo = dist.new_group(backend="gloo")
    t = torch.ones(3)
    dist.all_reduce(t, group=gloo)
    assert t.tolist() == [float(world)] * 3, t
    if mode != "gloo":
        mesh = init_device_mesh("npu", (world,))
        x = distribute_tensor(torch.arange(float(world * 4 * 2), device="npu").reshape(world * 4, 2), mesh, [Shard(0)])
        assert x.to_local().shape == (4, 2)
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(size, size), torch.nn.ReLU(), torch.nn.Linear(size, 4)).npu()
        fully_shard(model, mesh=mesh)
        model(torch.randn(4, size, device="npu")).sum().backward()
    if mode == "raise" and rank == 1:
        raise RuntimeError("teardown_job: rank 1 raises on purpose")
    if mode == "inflight":
        # left in flight on purpose: interpreter exit must complete them, not abort
        found["queued"] = len([dist.all_reduce(torch.ones(size * 64, device="npu"), async_op=True) for _ in range(4)])
    if mode in ("destroy", "gloo", "raise"):
        dist.destroy_process_group()
        deadline = time.monotonic() + 5
        while any(n.startswith("hccl-") for n in our_threads()) and time.monotonic() < deadline:
            time.sleep(0.01)
        found["after_destroy"] = our_threads()
        from npudist import _C

        found["shutdown"] = list(_C._shutdown_threads())
        found["after_shutdown"] = our_threads()
    if outdir:
        with open(os.path.join(outdir, f"rank{rank}.json"), "w") as f:
            json.dump(found, f)
    return found


if __name__ == "__main__":
    mode = sys.argv[1]
    size = int(sys.argv[2]) if len(sys.argv) > 2 else 16
    body(int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]), mode, size, os.environ.get("TEARDOWN_OUT"))
