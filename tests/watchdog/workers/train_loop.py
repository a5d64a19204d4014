"""A rank of the metrics tests: a small training loop on hccl that reports its steps.

``train_loop.py OUTDIR [--steps N]``: init hccl, then each step an all_reduce and an
all_gather on npu plus ``record_step``; writes ``OUTDIR/pid-<rank>`` at start and
``OUTDIR/steps-<rank>`` after each 10 steps. Runs until ``OUTDIR/stop`` exists (or N steps),
then destroys the group and exits 0. ``OUTDIR/exit-<rank>`` containing a code makes that
rank exit with it at its next step.
"""
import argparse
import os
import time

import torch
import torch.distributed as dist

import npudist.watchdog as watchdog

p = argparse.ArgumentParser()
p.add_argument("outdir")
p.add_argument("--steps", type=int, default=0, help="0: until OUTDIR/stop exists")
args = p.parse_args()

rank, local_rank = int(os.environ["RANK"]), int(os.environ["LOCAL_RANK"])
with open(os.path.join(args.outdir, f"pid-{rank}"), "w") as f:
    f.write(str(os.getpid()))
torch.npu.set_device(local_rank)
dist.init_process_group("hccl")
x = torch.ones(4096, device="npu")
keep = torch.empty(1 << 20, device="npu")  # 4 MiB held: memory series have something to show
step = 0
while True:
    t0 = time.perf_counter()
    dist.all_reduce(x)
    x.div_(dist.get_world_size())
    out = [torch.empty(256, device="npu") for _ in range(dist.get_world_size())]
    dist.all_gather(out, x[:256])
    time.sleep(0.02)
    watchdog.record_step(time.perf_counter() - t0, tokens=1024)
    step += 1
    if step % 10 == 0:
        with open(os.path.join(args.outdir, f"steps-{rank}"), "w") as f:
            f.write(str(step))
    exit_file = os.path.join(args.outdir, f"exit-{rank}")
    if os.path.exists(exit_file):
        with open(exit_file) as f:
            os._exit(int(f.read()))
    if args.steps and step >= args.steps:
        break
    if not args.steps and step % 5 == 0 and os.path.exists(os.path.join(args.outdir, "stop")):
        dist.barrier()  # both ranks leave at the same step
        break
dist.destroy_process_group()
