"""A rank of the launcher tests: ``job.py MODE [ARGS]``; prints ``KEY=VALUE`` facts for the tests.

Uses the hccl backend when npudist registers it, else gloo, so the tests exercise hccl
once it lands.
"""
import os
import signal
import subprocess
import sys
import time

import torch
import torch.distributed as dist

import npudist  # noqa: F401  (registers npu when torch's backend autoload is off)
from npudist import _shm_names

mode = sys.argv[1]
rank = int(os.environ["RANK"])
local_rank = int(os.environ["LOCAL_RANK"])
tag = os.environ["NPUDIST_JOB_TAG"]


def say(**facts):
    print(" ".join(f"{k}={v}" for k, v in facts.items()), flush=True)


def shm(name):
    path = f"/dev/shm/{_shm_names.job_prefix(tag)}{name}"  # the engine's naming rule
    with open(path, "w") as f:
        f.write("x")
    return path


def orphan():
    """A child in its own session: outside the rank's process group, so only npurun's sweep finds it."""
    return subprocess.Popen(["sleep", "600"], start_new_session=True).pid


if mode == "ok":
    torch.npu.set_device(local_rank)
    backend = "hccl" if dist.is_backend_available("hccl") else "gloo"
    dist.init_process_group(backend)
    dev = "npu" if backend == "hccl" else "cpu"
    t = torch.tensor([float(rank + 1)], device=dev)
    dist.all_reduce(t)
    props = torch.npu.get_device_properties(torch.npu.current_device())
    shm(f"leftover{rank}")
    say(rank=rank, local_rank=local_rank, world=dist.get_world_size(), lws=os.environ["LOCAL_WORLD_SIZE"],
        backend=backend, sum=int(t.item()), device=torch.npu.current_device(), physical=props.physical_id,
        visible=torch.npu.device_count(), threads=os.environ.get("OMP_NUM_THREADS"), tag=tag,
        host=os.environ.get("NPUDIST_HOSTNAME", "-"), restart=os.environ["TORCHELASTIC_RESTART_COUNT"])
    print(f"stderr line of rank {rank}", file=sys.stderr, flush=True)
    dist.destroy_process_group()

elif mode == "collective-fail":  # rank 1 raises while the others wait in an all_reduce
    backend = "hccl" if dist.is_backend_available("hccl") else "gloo"
    dist.init_process_group(backend)
    torch.npu.set_device(local_rank)
    say(rank=rank, pid=os.getpid(), tag=tag, ready=1)
    if rank == 1:
        raise ValueError("boom from rank 1")
    t = torch.ones(1, device="npu" if backend == "hccl" else "cpu")
    dist.all_reduce(t)

elif mode == "collective-exit":  # all ranks all_reduce; then rank argv[2] exits 3, ranks >= argv[3] sleep first
    fail_rank = int(sys.argv[2])
    sleep_from = int(sys.argv[3]) if len(sys.argv) > 3 else 1 << 30
    backend = "hccl" if dist.is_backend_available("hccl") else "gloo"
    dist.init_process_group(backend)
    torch.npu.set_device(local_rank)
    t = torch.ones(2, device="npu" if backend == "hccl" else "cpu")
    dist.all_reduce(t)
    if backend == "hccl":
        torch.npu.synchronize()
    dist.destroy_process_group()
    say(rank=rank, pid=os.getpid(), sum=int(t[0].item()), done=1)
    if rank >= sleep_from:
        time.sleep(600)
    if rank == fail_rank:
        sys.exit(3)

elif mode == "raise":  # rank 1 raises, the others wait (in a sleep, or a collective)
    shm(f"r{rank}")
    say(rank=rank, pid=os.getpid(), tag=tag, orphan=orphan() if rank == 0 else "-", ready=1)
    if rank == 1:
        time.sleep(1)
        raise ValueError("boom from rank 1")
    time.sleep(600)

elif mode == "exit":  # rank 1 exits with code argv[2]
    say(rank=rank, pid=os.getpid(), ready=1)
    if rank == 1:
        time.sleep(0.5)
        os._exit(int(sys.argv[2]))
    time.sleep(600)

elif mode == "wait":  # every rank waits to be killed; writes shm and starts an orphan
    shm(f"r{rank}")
    say(rank=rank, pid=os.getpid(), tag=tag, orphan=orphan(), ready=1)
    time.sleep(600)

elif mode == "sigterm":  # "checkpoint" on SIGTERM (takes a moment: the grace period must allow it)
    ckpt_dir = sys.argv[2]
    ignore = len(sys.argv) > 3 and int(sys.argv[3]) == rank

    def on_term(signum, frame):
        if ignore:
            say(rank=rank, ignored=signal.Signals(signum).name)
            return
        time.sleep(1.0)
        with open(os.path.join(ckpt_dir, f"ckpt{rank}"), "w") as f:
            f.write(signal.Signals(signum).name)
        say(rank=rank, got=signal.Signals(signum).name)
        sys.exit(0)

    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGINT, lambda *a: say(rank=rank, got_sigint=1))
    say(rank=rank, pid=os.getpid(), ready=1)
    while True:
        time.sleep(0.1)

elif mode == "restart":  # attempt 0: rank 1 fails; later attempts succeed and report leftovers
    attempt = int(os.environ["TORCHELASTIC_RESTART_COUNT"])
    stale = sorted(f for f in os.listdir("/dev/shm") if f.startswith(f"{_shm_names.job_prefix(tag)}a{attempt - 1}"))
    say(rank=rank, attempt=attempt, tag=tag, stale=",".join(stale) or "-")
    shm(f"a{attempt}r{rank}")
    if attempt == 0 and rank == 1:
        time.sleep(0.5)
        sys.exit(3)
    if attempt == 0:
        time.sleep(600)

elif mode == "restart-store":  # each attempt: a Gloo group beside hccl; attempt 0's rank 1 dies after it
    from npudist.fsdp import checkpoint_process_group

    attempt = int(os.environ["TORCHELASTIC_RESTART_COUNT"])
    dist.init_process_group("hccl", device_id=torch.device("npu", local_rank))
    store = dist.distributed_c10d._get_default_store()
    seen = [a for a in range(attempt) if store.check([f"probe_a{a}_r{rank}"])]  # an earlier attempt's key?
    store.set(f"probe_a{attempt}_r{rank}", "1")
    group = checkpoint_process_group()  # Gloo connectFullMesh through the store
    t = torch.ones(1)
    dist.all_reduce(t, group=group)
    say(rank=rank, attempt=attempt, gloo_sum=int(t.item()), earlier_keys=",".join(map(str, seen)) or "-")
    if attempt == 0 and rank == 1:
        os._exit(3)
    if attempt == 0:
        time.sleep(600)
    dist.destroy_process_group()

else:
    sys.exit(f"unknown mode {mode}")
