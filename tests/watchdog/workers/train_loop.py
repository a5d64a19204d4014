"""A rank of the metrics tests: a small training loop on hccl that reports its steps.

``train_loop.py OUTDIR [--steps N]``: init hccl, then each step an all_reduce and an
all_gather on npu plus ``record_step``; writes ``OUTDIR/pid-<rank>`` at start and
``OUTDIR/steps-<rank>`` after each 10 steps. Runs until ``OUTDIR/stop`` exists (or N steps),
then destroys the group and exits 0. ``OUTDIR/exit-<rank>`` containing a code makes that
rank exit with it at its next step (once: the file is removed). ``--fail-first-attempt``:
the first attempt creates no process group; rank 1 waits for ``OUTDIR/exit-1`` and exits.
"""
import argparse
import os
import time

import torch
import torch.distributed as dist

import npudist.watchdog.metrics as metrics

p = argparse.ArgumentParser()
p.add_argument("outdir")
p.add_argument("--steps", type=int, default=0, help="0: until OUTDIR/stop exists")
p.add_argument("--fail-first-attempt", action="store_true",
               help="attempt 0 creates no process group: rank 1 waits for OUTDIR/exit-1, rank 0 sleeps")
p.add_argument("--backend", default="hccl", help="hccl (tensors on npu) or gloo (collectives on cpu tensors)")
args = p.parse_args()

rank, local_rank = int(os.environ["RANK"]), int(os.environ["LOCAL_RANK"])
with open(os.path.join(args.outdir, f"pid-{rank}"), "w") as f:
    f.write(str(os.getpid()))
if args.fail_first_attempt and os.environ.get("TORCHELASTIC_RESTART_COUNT") == "0":
    # before any process group: a restart after a mid-collective failure does not work with
    # torch 2.13's agent store (stale keys of the first attempt), for gloo as for hccl
    while rank == 1 and not os.path.exists(os.path.join(args.outdir, "exit-1")):
        time.sleep(0.1)
    if rank == 1:
        with open(os.path.join(args.outdir, "exit-1")) as f:
            code = int(f.read())
        os.unlink(os.path.join(args.outdir, "exit-1"))
        os._exit(code)
    time.sleep(600)
torch.npu.set_device(local_rank)
dist.init_process_group(args.backend)
dev = "npu" if args.backend == "hccl" else "cpu"
x = torch.ones(4096, device=dev)
keep = torch.empty(1 << 20, device="npu")  # 4 MiB held: memory series have something to show
step = 0
while True:
    t0 = time.perf_counter()
    dist.all_reduce(x)
    x.div_(dist.get_world_size())
    out = [torch.empty(256, device=dev) for _ in range(dist.get_world_size())]
    dist.all_gather(out, x[:256])
    time.sleep(0.02)
    metrics.record_step(time.perf_counter() - t0, tokens=1024)
    step += 1
    if step % 10 == 0:
        with open(os.path.join(args.outdir, f"steps-{rank}"), "w") as f:
            f.write(str(step))
    exit_file = os.path.join(args.outdir, f"exit-{rank}")
    if os.path.exists(exit_file):
        with open(exit_file) as f:
            code = int(f.read())
        os.unlink(exit_file)  # once: a restarted rank runs on
        os._exit(code)
    if args.steps and step >= args.steps:
        break
    if not args.steps and step % 5 == 0 and os.path.exists(os.path.join(args.outdir, "stop")):
        dist.barrier()  # both ranks leave at the same step
        break
dist.destroy_process_group()
