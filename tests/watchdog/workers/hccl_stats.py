"""A rank of test_hccl_metrics: known collectives on hccl, a slow rank and a size mismatch in
sub-groups, then its own metrics as JSON.

Prints ``RESULT {"samples": [[name, labels, value], ...], "scrape_s": [...]}`` with every
npudist_hccl_* sample of this rank's registry after the collectives completed.
"""
import json
import os
import time

import torch
import torch.distributed as dist
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from npudist.watchdog import stragglers, watchdog_status
from npudist.watchdog.metrics import registry

rank, local_rank = int(os.environ["RANK"]), int(os.environ["LOCAL_RANK"])
torch.npu.set_device(local_rank)
dist.init_process_group("hccl")
world = dist.get_world_size()
x = torch.ones(4096, device="npu")  # 16 KiB
for _ in range(3):
    dist.all_reduce(x)
b = torch.zeros(100, device="npu")  # 400 B
for _ in range(2):
    dist.broadcast(b, src=0)
out = torch.empty(world * 256, device="npu")
dist.all_gather_into_tensor(out, x[:256])
sub = dist.new_group(list(range(world)), group_desc="metrics_sub")
# a slow rank: rank 1 arrives 200 ms late at each of the 6 all_reduce of the sub-group, so it is
# always the last to arrive there and the others are never charged
for _ in range(6):
    if rank == 1:
        time.sleep(0.2)
    dist.all_reduce(x, group=sub)
# a mismatch: the ranks disagree on the size (the group keeps working: docs/collectives.md)
mm = dist.new_group(list(range(world)), group_desc="metrics_mismatch")
mismatch_error = None
try:
    dist.all_reduce(torch.ones(64 if rank == 0 else 32, device="npu"), group=mm)
    torch.npu.synchronize()
except Exception as e:  # DistBackendError on every rank
    mismatch_error = f"{type(e).__name__}: {e}"
torch.npu.synchronize()
time.sleep(0.2)

reg = registry()
timings = []
for _ in range(20):
    t0 = time.perf_counter()
    text = generate_latest(reg).decode()
    timings.append(time.perf_counter() - t0)
samples = [[s.name, s.labels, s.value] for fam in text_string_to_metric_families(text)
           for s in fam.samples if s.name.startswith("npudist_hccl_")]
print("RESULT " + json.dumps({"samples": samples, "scrape_s": timings, "mismatch_error": mismatch_error,
                              "status": watchdog_status(), "stragglers": [g["desc"] for g in stragglers(0.002)]}),
      flush=True)
dist.barrier()
dist.destroy_process_group()
