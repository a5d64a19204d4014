"""Rank worker: collectives captured in an npu graph, replayed interleaved with eager ones."""
import json
import os

import torch
import torch.distributed as dist

import npudist  # noqa: F401  (registers npu when torch's backend autoload is off)


def main():
    rank = int(os.environ["RANK"])
    world = int(os.environ["WORLD_SIZE"])
    torch.npu.set_device(rank)
    dist.init_process_group("hccl", device_id=torch.device("npu", rank))
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
    print("RESULT " + json.dumps(result), flush=True)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
