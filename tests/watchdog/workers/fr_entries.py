"""A rank of test_flight_recorder: a known sequence of hccl collectives, then this rank's
flight-recorder trace with the run-dependent values (clock readings, thread ids) replaced by
what can be checked about them.

Prints ``RESULT {"entries": [...], "pg_config": {...}, "pg_status": {...}, "version": ...,
"checks": [...]}``; ``checks`` lists every timing invariant that did not hold (empty when all did).
"""
import json
import os

import torch
import torch.distributed as dist

from npudist.watchdog import flight_recorder_trace

rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
torch.npu.set_device(rank)
dist.init_process_group("hccl")
dev = "npu"
x = torch.ones(1024, device=dev)
for _ in range(5):  # the ring (TORCH_HCCL_TRACE_BUFFER_SIZE=20 in the test) has dropped these at the end
    dist.all_reduce(x)
dist.all_reduce(x)
dist.all_reduce(x)
y = torch.ones(3, 5, device=dev)
dist.all_reduce(y, async_op=True).wait()
h = torch.zeros(2, 3, 4, dtype=torch.float16, device=dev)
dist.broadcast(h, src=0)
outs = [torch.empty(7, device=dev) for _ in range(world)]
dist.all_gather(outs, torch.ones(7, device=dev))
big = torch.empty(world * 6, device=dev)
dist.all_gather_into_tensor(big, torch.ones(6, device=dev))
rs = torch.empty(6, device=dev)
dist.reduce_scatter_tensor(rs, torch.ones(world * 6, device=dev))
p = torch.ones(9, dtype=torch.int64, device=dev)
if rank == 0:
    dist.send(p, dst=1)
    dist.send(p, dst=1)
elif rank == 1:
    dist.recv(p, src=0)
    dist.recv(p)  # from any source
ops = [dist.P2POp(dist.isend, torch.ones(4, device=dev), (rank + 1) % world),
       dist.P2POp(dist.irecv, torch.empty(4, device=dev), (rank - 1) % world)]
for w in dist.batch_isend_irecv(ops):
    w.wait()
a, b = torch.ones(2, device=dev), torch.ones(3, 3, device=dev)
with dist._coalescing_manager(async_ops=True) as cm:
    dist.all_reduce(a)
    dist.all_reduce(b)
cm.wait()
dist.barrier()
many = torch.ones(1, 2, 1, 2, 1, 2, device=dev)  # 6 dimensions
dist.all_reduce(many)
scalar = torch.ones((), dtype=torch.float64, device=dev)
dist.all_reduce(scalar)
a2a = torch.empty(world * 2, device=dev)
dist.all_to_all_single(a2a, torch.ones(world * 2, device=dev))
rejected = None
try:
    dist.all_reduce(torch.ones(2, device=dev), op=dist.ReduceOp.BAND)  # invalid for float
except ValueError as e:
    rejected = str(e)[:40]
# hccl serves cpu tensors only where named for cpu (it is registered for npu, as in torch_npu)
sub = dist.new_group(list(range(world)), group_desc="fr_sub", backend="cpu:hccl,npu:hccl")
dist.all_reduce(x, group=sub)
c = torch.ones(3, dtype=torch.bfloat16)  # a cpu tensor
dist.all_reduce(c, group=sub)
torch.npu.synchronize()

trace = flight_recorder_trace()
checks, entries = [], []
for e in trace["entries"]:
    e = dict(e)
    where = f"record {e['record_id']} ({e['profiling_name']})"
    created, started, completed = e["time_created_ns"], e["time_discovered_started_ns"], e["time_discovered_completed_ns"]
    if e["state"] == "completed":
        if not (created <= started <= completed):
            checks.append(f"{where}: times out of order {created} {started} {completed}")
        if abs(e["duration_ms"] - (completed - started) / 1e6) > 1e-9:
            checks.append(f"{where}: duration_ms {e['duration_ms']} != completed - started")
    e["time_created_ns"] = "t" if isinstance(created, int) and created > 0 else created
    e["time_discovered_started_ns"] = "t" if isinstance(started, int) and started > 0 else started
    e["time_discovered_completed_ns"] = "t" if isinstance(completed, int) and completed > 0 else completed
    if "duration_ms" in e:
        e["duration_ms"] = "d" if isinstance(e["duration_ms"], float) and e["duration_ms"] >= 0 else e["duration_ms"]
    e["thread_id"] = "tid" if e["thread_id"].isdigit() else e["thread_id"]
    e["frames"] = [(f["name"], os.path.basename(f["filename"])) for f in e["frames"]]
    e["key_order"] = list(e)
    entries.append(e)
print("RESULT " + json.dumps({"entries": entries, "pg_config": trace["pg_config"], "pg_status": trace["pg_status"],
                              "version": trace["version"], "keys": list(trace), "rejected": rejected,
                              "checks": checks}), flush=True)
dist.destroy_process_group()
