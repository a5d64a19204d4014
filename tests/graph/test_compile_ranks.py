"""torch.compile on npu with hccl on 2 real ranks: stream order with a pending collective
(default tier); DDP with a compiled model and FSDP2 with per-block compile vs eager over 10
steps (full tier: compiles take minutes on 2 cores).

The ranks run ``compile_on_rank(cases)`` (npudist.testing.multiproc.run_on_ranks):

stream: a collective pending on the current stream completes before a compiled kernel reads its
        output (rank 1 joins the all_reduce late, so on rank 0 the collective is still pending
        when the compiled kernel runs); with the wait turned off (npu config wait_for_stream=False)
        the kernel reads the stale input, which shows the check can fail.
ddp:    DDP with a compiled model vs eager DDP: 10 steps, losses within 1e-5 relative.
fsdp:   FSDP2 with per-block torch.compile vs eager FSDP2: 10 steps, losses within 1e-5 relative.
"""
import time

import pytest
import torch
import torch.distributed as dist
from torch._inductor import metrics
from torch.nn.parallel import DistributedDataParallel as DDP

import npudist.graph.compile.config as npu_config
from npudist.testing.multiproc import run_on_ranks
from tests.fsdp.tiny_gpt import GPT, TINY, B, Checker, build_fsdp_model, global_batch

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


def compile_on_rank(cases):
    """Runs on every rank (the hccl group is up): the named cases, one Checker summary."""
    rank, world = dist.get_rank(), dist.get_world_size()
    dev = torch.device("npu", torch.npu.current_device())
    c = Checker()
    fns = {"stream": stream_case, "ddp": ddp_case, "fsdp": fsdp_case}
    for name in cases:
        c.run(name, fns[name], c, rank, world, dev)
        dist.barrier()
    c.report()


def _run(cases, timeout):
    ranks = run_on_ranks(compile_on_rank, 2, cases, timeout=timeout)
    assert ranks.ok(), ranks.explain()
    for r in range(2):
        summary = ranks.summary(r)
        assert summary is not None and summary["checks"] > 0, ranks.explain()
        assert summary["nfail"] == 0, (summary["failures"], ranks.explain())
    return ranks


@pytest.mark.timeout(600)
def test_compiled_kernel_waits_for_pending_collective():
    _run(["stream"], timeout=540)


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_ddp_compiled_training_matches_eager():
    _run(["ddp"], timeout=1700)


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_fsdp2_per_block_compile_training_matches_eager():
    _run(["fsdp"], timeout=1700)
