"""2 ranks: collectives captured in a graph replay in order on every rank,
with new sequence numbers, interleaved with eager collectives."""
import pytest
import torch
import torch.distributed as dist

from npudist.testing.multiproc import run_on_ranks

pytestmark = pytest.mark.timeout(400)


def collectives_on_rank():
    """Runs on every rank (the hccl group is up); returns what the test asserts on."""
    rank, world = dist.get_rank(), dist.get_world_size()
    backend = dist.group.WORLD._get_backend(torch.device("npu"))
    result = {}

    x = torch.full((1000,), float(rank + 1), device="npu")
    other = torch.ones(10, device="npu")
    g = torch.npu.NPUGraph()
    seq0 = backend._get_sequence_number_for_group()
    with torch.npu.graph(g):
        y = x * 2
        dist.all_reduce(y)  # sum over ranks of 2*(r+1)
        z = y + 1
        dist.broadcast(z, src=0)
        dist.all_reduce(z, op=dist.ReduceOp.MAX)
    result["seq_after_capture"] = backend._get_sequence_number_for_group() - seq0  # nothing issued
    result["captured_untouched"] = bool(torch.equal(x.cpu(), torch.full((1000,), float(rank + 1))))
    total = sum(2 * (r + 1) for r in range(world))
    ok = []
    seqs = []
    for i in range(3):
        other.fill_(float(i + rank))
        dist.all_reduce(other)  # eager, between replays
        x.fill_(float(rank + 1 + i))
        g.replay()
        want = sum(2 * (r + 1 + i) for r in range(world)) + 1
        ok.append(bool(torch.all(z == want).item()) and bool(torch.all(other == sum(i + r for r in range(world))).item()))
        seqs.append(backend._get_sequence_number_for_group())
    result["replays_ok"] = ok
    result["seq_steps"] = [b - a for a, b in zip(seqs, seqs[1:])]
    result["total"] = total
    dist.barrier()
    return result



def test_two_rank_collectives_in_graph():
    r = run_on_ranks(collectives_on_rank, 2, env={"TORCH_HCCL_ASYNC_ERROR_HANDLING": "0"}, timeout=300).check()
    for res in r.values():
        assert res["seq_after_capture"] == 0, res  # capture leaves no in-flight work
        assert res["captured_untouched"], res
        assert res["replays_ok"] == [True, True, True], res
        # Each iteration: one eager all_reduce + three replayed collectives, each numbered anew.
        assert res["seq_steps"] == [4, 4], res
