"""torch.compile on npu with hccl, on real ranks. argv[1:]: the cases to run.

stream: a collective pending on the current stream completes before a compiled kernel reads its
        output (rank 1 joins the all_reduce late, so on rank 0 the collective is still pending
        when the compiled kernel runs); with the wait turned off (npu config wait_for_stream=False)
        the kernel reads the stale input, which shows the check can fail.
ddp:    DDP with a compiled model vs eager DDP: 10 steps, losses within 1e-5 relative.
fsdp:   FSDP2 with per-block torch.compile vs eager FSDP2: 10 steps, losses within 1e-5 relative.
"""
import sys
import time

import torch
import torch.distributed as dist
from torch._inductor import metrics
from torch.nn.parallel import DistributedDataParallel as DDP

import npudist.graph.compile.config as npu_config
from tests.fsdp.tiny_gpt import GPT, TINY, B, Checker, build_fsdp_model, global_batch, setup

STEPS = 10


def stream_case(c, rank, world, dev):
    def f(x):
        return x * 2 + 1

    g = torch.compile(f)
    expected = sum(range(1, world + 1)) * 2 + 1
    for wait, want in ((True, expected), (False, 1 * 2 + 1)):
        with npu_config.patch(wait_for_stream=wait):
            g(torch.ones(4, device=dev))  # compile before the timed part
            dist.barrier()
            x = torch.full((4,), float(rank + 1), device=dev)
            if rank != 0:
                time.sleep(1.5)  # rank 0's all_reduce stays pending meanwhile
            t0 = time.perf_counter()
            # stream-ordered wait (as WorkNCCL::wait): returns at once, the current stream waits
            dist.all_reduce(x, async_op=True).wait()
            t1 = time.perf_counter()
            pending = not torch.npu.current_stream().query()
            y = g(x)
            if rank == 0:
                c.true(pending, f"all_reduce still pending when the compiled call began (wait_for_stream={wait})",
                       f"issue+wait took {t1 - t0:.3f} s")
            torch.npu.synchronize()
            if rank == 0:
                c.close(y, torch.full((4,), float(want)),
                        f"compiled kernel after a pending all_reduce (wait_for_stream={wait})", rtol=0, atol=0)
            c.close(x, torch.full((4,), float(sum(range(1, world + 1)))),
                    f"the all_reduce itself (wait_for_stream={wait})", rtol=0, atol=0)
        torch._dynamo.reset()


def _train(model, opt, rank, world, dev):
    losses = []
    for step in range(STEPS):
        batch = global_batch(step, world)[rank * B:(rank + 1) * B].to(dev)
        _, loss = model(batch[:, :-1], batch[:, 1:])
        loss.backward()
        opt.step()
        opt.zero_grad()
        losses.append(loss.detach().clone())
    return torch.stack(losses).cpu()


def ddp_case(c, rank, world, dev):
    torch.manual_seed(0)
    state = GPT(TINY).state_dict()
    runs = {}
    for compiled in (False, True):
        model = GPT(TINY).to(dev)
        model.load_state_dict({k: v.to(dev) for k, v in state.items()})
        ddp = DDP(model, device_ids=None)
        net = torch.compile(ddp) if compiled else ddp
        metrics.reset()
        runs[compiled] = _train(net, torch.optim.AdamW(model.parameters(), lr=1e-3), rank, world, dev)
        if compiled:
            c.true(metrics.generated_kernel_count > 0, "DDP: Inductor kernels were generated")
    c.info["ddp_losses"] = {str(k): v.tolist() for k, v in runs.items()}
    c.close(runs[True], runs[False], "DDP compiled vs eager losses, 10 steps", rtol=1e-5, atol=0)


def fsdp_case(c, rank, world, dev):
    runs = {}
    for compiled in (False, True):
        # compiled: per-block torch.compile, as examples/train_gpt.py --compile
        model = build_fsdp_model(TINY, dev, mp="fp32", seed=0, compile=compiled)
        metrics.reset()
        runs[compiled] = _train(model, torch.optim.AdamW(model.parameters(), lr=1e-3), rank, world, dev)
        if compiled:
            c.true(metrics.generated_kernel_count > 0, "FSDP2: Inductor kernels were generated")
    c.info["fsdp_losses"] = {str(k): v.tolist() for k, v in runs.items()}
    c.close(runs[True], runs[False], "FSDP2 per-block compiled vs eager losses, 10 steps", rtol=1e-5, atol=0)


def main():
    rank, world, dev = setup()
    c = Checker()
    cases = {"stream": stream_case, "ddp": ddp_case, "fsdp": fsdp_case}
    for name in sys.argv[1:]:
        c.run(name, cases[name], c, rank, world, dev)
        dist.barrier()
    c.finish()


if __name__ == "__main__":
    main()
