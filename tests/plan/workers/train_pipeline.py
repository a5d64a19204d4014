"""A plain npurun training script with pipeline parallelism (torch.distributed.pipelining): an MLP stack split into
one stage per rank (``--schedule gpipe`` / ``1f1b``) or two per rank (``interleaved``: Interleaved1F1B's virtual
stages), SGD. Stage metadata is inferred by torch (DYNAMIC: shapes exchanged between stages) unless ``--static``
(``PipelineStage(input_args=, output_args=)``).

tests/plan/test_capture_script.py captures it with ``python -m npudist.plan capture --ranks ...`` (one rank per
stage); it runs under npurun as well.
"""
import argparse
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributed.pipelining import PipelineStage, Schedule1F1B, ScheduleGPipe, ScheduleInterleaved1F1B

import npudist  # noqa: F401  (registers npu when torch's backend autoload is off)

p = argparse.ArgumentParser()
p.add_argument("--schedule", choices=("gpipe", "1f1b", "interleaved"), default="1f1b")
p.add_argument("--dim", type=int, default=64)
p.add_argument("--microbatches", type=int, default=4)
p.add_argument("--batch", type=int, default=8)
p.add_argument("--steps", type=int, default=3)
p.add_argument("--static", action="store_true", help="give each stage input_args/output_args (static metadata)")
p.add_argument("--fail-rank", type=int, default=None, help="this rank raises before its pipeline starts (a test)")
args = p.parse_args()

rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
torch.npu.set_device(int(os.environ["LOCAL_RANK"]))
dist.init_process_group("hccl")
dev = torch.device("npu", int(os.environ["LOCAL_RANK"]))
per_rank = 2 if args.schedule == "interleaved" else 1
n_stages = world * per_rank
mb = args.batch // args.microbatches
stages, params = [], []
for v in range(per_rank):
    index = rank + v * world  # interleaved: rank r holds stages r and r + world
    mod = nn.Sequential(nn.Linear(args.dim, args.dim), nn.ReLU()).to(dev)
    params += list(mod.parameters())
    if args.static:
        meta_in = torch.empty(mb, args.dim, device=dev, requires_grad=index > 0)
        meta_out = torch.empty(mb, args.dim, device=dev, requires_grad=True)
        stages.append(PipelineStage(mod, index, n_stages, dev, input_args=(meta_in,), output_args=(meta_out,)))
    else:
        stages.append(PipelineStage(mod, index, n_stages, dev))
loss_fn = lambda out, target: ((out - target) ** 2).mean()  # noqa: E731  (the schedule's loss)
if args.schedule == "interleaved":
    sched = ScheduleInterleaved1F1B(stages, n_microbatches=args.microbatches, loss_fn=loss_fn)
else:
    cls = ScheduleGPipe if args.schedule == "gpipe" else Schedule1F1B
    sched = cls(stages[0], n_microbatches=args.microbatches, loss_fn=loss_fn)
if rank == args.fail_rank:
    raise RuntimeError(f"rank {rank} fails on purpose (--fail-rank)")
opt = torch.optim.SGD(params, lr=0.01)
x = torch.randn(args.batch, args.dim, device=dev)
for _ in range(args.steps):
    if rank == 0:
        sched.step(x, target=x) if rank == world - 1 or args.schedule == "interleaved" else sched.step(x)
    elif rank == world - 1:
        sched.step(target=x, losses=[])
    else:
        sched.step()
    opt.step()
    opt.zero_grad()
dist.destroy_process_group()
