"""A rank of test_hccl_metrics' timeout case: rank 1 never joins an all_reduce, rank 0's times
out (group timeout 3 s, TORCH_HCCL_ASYNC_ERROR_HANDLING=0 so the process lives on); rank 0
prints its npudist_hccl_* samples after the error."""
import json
import os
import time
from datetime import timedelta

import torch
import torch.distributed as dist
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from npudist.watchdog.metrics import registry

rank, local_rank = int(os.environ["RANK"]), int(os.environ["LOCAL_RANK"])
torch.npu.set_device(local_rank)
dist.init_process_group("hccl", timeout=timedelta(seconds=3))
x = torch.ones(1024, device="npu")
dist.all_reduce(x)
torch.npu.synchronize()
error = None
if rank == 0:
    try:
        dist.all_reduce(x)
        torch.npu.synchronize()
    except Exception as e:
        error = f"{type(e).__name__}: {e}"
    time.sleep(0.5)
    text = generate_latest(registry()).decode()
    samples = [[s.name, s.labels, s.value] for fam in text_string_to_metric_families(text)
               for s in fam.samples if s.name.startswith("npudist_hccl_")]
    print("RESULT " + json.dumps({"samples": samples, "error": error}), flush=True)
else:
    time.sleep(8)  # never joins; stays alive past rank 0's timeout
os._exit(0)  # the group is unusable after a timeout: no destroy_process_group
