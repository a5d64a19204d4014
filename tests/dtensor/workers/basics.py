"""DTensor basics on an npu mesh (hccl): distribute_tensor, full_tensor, redistribute between Shard,
Replicate and Partial, from_local / to_local, and random ops through DTensor's RNG tracker."""
import torch
import torch.distributed as dist
from common import RANK, WORLD, Checker, init, report
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.tensor import DTensor, Partial, Replicate, Shard, distribute_tensor

chk = Checker()
init()
mesh = init_device_mesh("npu", (WORLD,))
full = torch.arange(48, dtype=torch.float32).reshape(8, 6).npu()

# distribute / full_tensor / to_local for each placement
for p in (Shard(0), Shard(1), Replicate()):
    d = distribute_tensor(full, mesh, [p])
    chk.true(d.to_local().device.type == "npu", f"{p}: local shard on {d.to_local().device}")
    want_local = full.chunk(WORLD, p.dim)[RANK] if isinstance(p, Shard) else full
    chk.close(d.to_local(), want_local, f"{p}: to_local")
    chk.close(d.full_tensor(), full, f"{p}: full_tensor")

# redistribute between every pair of Shard(0), Shard(1), Replicate
for a in (Shard(0), Shard(1), Replicate()):
    for b in (Shard(0), Shard(1), Replicate()):
        d = distribute_tensor(full, mesh, [a]).redistribute(mesh, [b])
        chk.true(tuple(d.placements) == (b,), f"{a}->{b}: placements {d.placements}")
        chk.close(d.full_tensor(), full, f"{a}->{b}")

# Partial: from_local of per-rank parts, reduced by redistribute (sum, avg, max)
part = full * (RANK + 1)
total = sum(full * (r + 1) for r in range(WORLD))
for op, want in (("sum", total), ("avg", total / WORLD), ("max", full * WORLD)):
    d = DTensor.from_local(part, mesh, [Partial(op)])
    chk.close(d.redistribute(mesh, [Replicate()]).to_local(), want, f"Partial({op}) -> Replicate")
    chk.close(d.redistribute(mesh, [Shard(0)]).to_local(), want.chunk(WORLD)[RANK], f"Partial({op}) -> Shard(0)")

# from_local with Shard, then ops and autograd through DTensor
local = torch.randn(4, 6, generator=torch.Generator().manual_seed(RANK)).npu().requires_grad_()
d = DTensor.from_local(local, mesh, [Shard(0)])
(d * d).sum().full_tensor().backward()
chk.close(local.grad, 2 * local.detach(), "from_local autograd")


def gathered(t):
    out = [torch.empty_like(t) for _ in range(WORLD)]
    dist.all_gather(out, t)
    return out


# random ops: DTensor's RNG tracker keeps replicated tensors identical and shards distinct
torch.npu.manual_seed(1234)
r = distribute_tensor(torch.empty(8, 6, device="npu"), mesh, [Replicate()])
r.uniform_()
parts = gathered(r.to_local())
chk.true(all(torch.equal(parts[0], q) for q in parts), "Replicate uniform_: ranks differ")
torch.npu.manual_seed(1234)
s = distribute_tensor(torch.empty(8, 6, device="npu"), mesh, [Shard(0)])
s.normal_()
parts = gathered(s.to_local())
chk.true(not torch.equal(parts[0], parts[1]), "Shard(0) normal_: shards are identical across ranks")
# the same seed gives the same sharded tensor again
torch.npu.manual_seed(1234)
s2 = distribute_tensor(torch.empty(8, 6, device="npu"), mesh, [Shard(0)])
s2.normal_()
chk.close(s2.to_local(), s.to_local(), "Shard(0) normal_ reproducible")
# dropout on a sharded DTensor keeps about keep_prob of the elements
x = distribute_tensor(torch.ones(64, 64, device="npu"), mesh, [Shard(0)])
y = torch.nn.functional.dropout(x, p=0.5, training=True).full_tensor()
kept = (y != 0).float().mean().item()
chk.true(0.4 < kept < 0.6, f"dropout kept {kept}")
# How DTensor's offset-based tracker drew each shard: rank r's (4, 6) shard is the npu generator's
# draw from (seed 1234, offset r * 24) -- its shard's linear index times its numel, rounded up to a
# multiple of 4 (torch.distributed.tensor._random) -- and the generator moves past the whole tensor.
torch.npu.manual_seed(1234)
state = torch.npu.get_rng_state()
state[8:] = torch.tensor([RANK * 24], dtype=torch.int64).view(torch.uint8)
torch.npu.set_rng_state(state)
chk.close(s.to_local(), torch.empty(4, 6, device="npu").normal_(), "Shard(0) normal_: the draw at offset rank * 24")
# Compared with the one a single device draws with the same seed (equal for CUDA's Philox, where
# offset k continues element k of a longer draw; not for npu's generator, whose draw of n values
# depends on n: docs/dtensor.md).
torch.npu.manual_seed(1234)
single = torch.empty(8, 6, device="npu").normal_()
report(kind="rng", sharded_equals_single_device=bool(torch.equal(s.full_tensor(), single)))

torch.npu.synchronize()
chk.finish()
