"""The shared segment: mapped with mode 0600, its name already gone from
/dev/shm once the group exists; and, with TORCH_DISTRIBUTED_DEBUG=DETAIL,
PyTorch's cross-rank checks catch a mismatch between simulated hosts."""
import os

import torch
import torch.distributed as dist
from common import RANK, init, report

from npudist import _shm_names

init()
tag = os.environ["NPUDIST_JOB_TAG"]
prefix = "/dev/shm/" + _shm_names.job_prefix(tag)  # the engine names it by the rule npurun's cleanup uses
maps = [line for line in open("/proc/self/maps") if prefix in line]
modes = []
for line in maps:
    rng = line.split()[0]
    try:
        modes.append(oct(os.stat(f"/proc/self/map_files/{rng}").st_mode & 0o777))
    except OSError as e:
        modes.append(str(e))
listed = [n for n in os.listdir("/dev/shm") if n.startswith(_shm_names.job_prefix(tag))]
err = None
if os.environ.get("TORCH_DISTRIBUTED_DEBUG") == "DETAIL":
    try:
        dist.all_reduce(torch.ones(4 + RANK, device="npu"))
        torch.npu.synchronize()
    except Exception as e:  # noqa: BLE001 - the error text is the result
        err = f"{type(e).__name__}: {e}"
report(rank=RANK, mapped=len(maps), deleted=all("(deleted)" in m for m in maps), modes=modes, listed=listed,
       error=err)
if err is None:
    dist.destroy_process_group()
else:
    os._exit(0)
