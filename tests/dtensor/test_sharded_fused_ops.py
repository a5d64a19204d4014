"""The npu fused ops on DTensors (2 ranks, npu mesh over hccl): for every placement their sharding
strategies offer, outputs and gradients equal the unsharded op's, and sharded inputs stay sharded;
and DTensor's basics on an npu mesh."""
import pytest
import torch
import torch.distributed as dist
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.tensor import DTensor, Partial, Replicate, Shard, distribute_tensor

from npudist.testing.checks import report

from . import Checker, run_ranks


def fused_sharded_on_rank():
    """Each npu fused op on DTensors (npu mesh over hccl), for each placement its sharding strategy offers:
    outputs and gradients equal the unsharded op's, and sharded inputs stay sharded (no all-gather)."""
    WORLD = dist.get_world_size()
    chk = Checker()
    mesh = init_device_mesh("npu", (WORLD,))
    ops = torch.ops.npu
    gen = torch.Generator().manual_seed(0)

    def rnd(*shape):
        return torch.randn(*shape, generator=gen).npu()

    def check(what, fn, inputs, placements, expect=None, grad_of=None):
        """fn(*inputs) -> tensor; compares DTensor vs plain outputs and grads of the inputs listed in grad_of."""
        grad_of = range(len(inputs)) if grad_of is None else grad_of
        ref_in = [t.clone().requires_grad_(i in grad_of and t.is_floating_point()) for i, t in enumerate(inputs)]
        ref = fn(*ref_in)
        w = torch.randn(ref.shape, generator=gen).npu()
        (ref * w).sum().backward()
        d_in = [distribute_tensor(t.clone(), mesh, [p]).requires_grad_(i in grad_of and t.is_floating_point())
                for i, (t, p) in enumerate(zip(inputs, placements))]
        out = fn(*d_in)
        if expect is not None:
            chk.true(tuple(out.placements) == (expect,), f"{what}: output placement {out.placements}, expected {expect}")
        chk.close(out.full_tensor(), ref, f"{what}: output")
        (out * distribute_tensor(w, mesh, out.placements)).sum().backward()
        for i in grad_of:
            if ref_in[i].requires_grad:
                chk.close(d_in[i].grad.full_tensor(), ref_in[i].grad, f"{what}: grad of input {i}")

    S, R = Shard, Replicate()

    # npu_rms_norm: any non-normalized dim; gamma replicated (its grad is a Partial sum)
    x, g = rnd(4, 6, 8), rnd(8)
    for p, e in ((S(0), S(0)), (S(1), S(1)), (S(2), None), (R, R)):
        chk.run(f"rms_norm x {p}", lambda: check(f"rms_norm x {p}", lambda a, b: ops.npu_rms_norm(a, b, 1e-6)[0],
                                                   [x, g], [p, R], e))
    g2 = rnd(6, 8)  # two normalized dims
    chk.run("rms_norm 2-D gamma", lambda: check("rms_norm 2-D gamma", lambda a, b: ops.npu_rms_norm(a, b)[0],
                                                [x, g2], [S(0), R], S(0)))

    def rstd_sharded():
        y, rstd = ops.npu_rms_norm(distribute_tensor(x, mesh, [S(1)]), distribute_tensor(g, mesh, [R]))
        chk.true(tuple(rstd.placements) == (S(1),), f"rms_norm rstd placement {rstd.placements}")
        chk.close(rstd.full_tensor(), ops.npu_rms_norm(x, g)[1], "rms_norm rstd")

    chk.run("rms_norm rstd", rstd_sharded)

    # npu_rotary_mul: x (B, S, N, D), cos/sin (1, S, 1, D); dims 0..2; r sharded with x where full-size
    x, c, s = rnd(2, 4, 2, 8), rnd(1, 4, 1, 8), rnd(1, 4, 1, 8)
    for mode in ("half", "interleave"):
        for d in range(3):
            rp = S(d) if d == 1 else R
            chk.run(f"rotary {mode} S({d})", lambda: check(
                f"rotary {mode} S({d})", lambda a, b, e: ops.npu_rotary_mul(a, b, e, mode), [x, c, s], [S(d), rp, rp],
                S(d)))
        chk.run(f"rotary {mode} S(3)", lambda: check(f"rotary {mode} S(3)",
                                                     lambda a, b, e: ops.npu_rotary_mul(a, b, e, mode), [x, c, s],
                                                     [S(3), R, R]))

    # npu_swiglu: any dim but the split one
    x = rnd(4, 6, 8)
    for dim in (-1, 1):
        for d in range(3):
            expect = S(d) if d != dim % 3 else None
            chk.run(f"swiglu dim {dim} S({d})", lambda: check(f"swiglu dim {dim} S({d})",
                                                               lambda a: ops.npu_swiglu(a, dim=dim), [x], [S(d)], expect))

    COMPRESSED = torch.ones(2048, 2048, dtype=torch.bool).triu(1).npu()
    # npu_fusion_attention: batch for every layout, heads for BNSD/BSND; GQA (4 query heads, 2 kv heads)
    B, SQ, N, NKV, D = 2, 4, 4, 2, 4
    shapes = {"BSH": ((B, SQ, N * D), (B, SQ, NKV * D)), "SBH": ((SQ, B, N * D), (SQ, B, NKV * D)),
              "BNSD": ((B, N, SQ, D), (B, NKV, SQ, D)), "BSND": ((B, SQ, N, D), (B, SQ, NKV, D))}
    splits = {"BSH": [0], "SBH": [1], "BNSD": [0, 1], "BSND": [0, 2]}
    for layout, (qs, ks) in shapes.items():
        q, k, v = rnd(*qs), rnd(*ks), rnd(*ks)
        for d in splits[layout] + [None]:
            p = S(d) if d is not None else S(qs.index(SQ) if layout != "SBH" else 0)  # None: sequence split
            for sparse in (0, 3):  # 3 with torch_npu's compressed causal mask (replicated)
                what = f"fusion_attention {layout} {p} sparse_mode={sparse}"
                def fn(a, b, e, m):
                    return ops.npu_fusion_attention(a, b, e, N, layout, atten_mask=m if sparse else None,
                                                    scale=D ** -0.5, sparse_mode=sparse)[0]
                chk.run(what, lambda: check(what, fn, [q, k, v, COMPRESSED], [p, p, p, R], p if d is not None else None,
                                            grad_of=[0, 1, 2]))
        # an explicit (B, 1, Sq, Skv) mask, sharded with the batch
        mask = torch.rand(B, 1, SQ, SQ, generator=gen) > 0.7
        mask[..., 0] = False
        md = mask.npu()
        what = f"fusion_attention {layout} mask"
        def fn_mask(a, b, e, m):
            return ops.npu_fusion_attention(a, b, e, N, layout, atten_mask=m, scale=0.3)[0]
        bd = splits[layout][0]
        chk.run(what, lambda: check(what, fn_mask, [q, k, v, md], [S(bd), S(bd), S(bd), R], S(bd), grad_of=[0, 1, 2]))

    torch.npu.synchronize()
    chk.report()


def basics_on_rank():
    """DTensor basics on an npu mesh (hccl): distribute_tensor, full_tensor, redistribute between Shard,
    Replicate and Partial, from_local / to_local, and random ops through DTensor's RNG tracker."""
    RANK, WORLD = dist.get_rank(), dist.get_world_size()
    chk = Checker()
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
    chk.report()


@pytest.mark.timeout(500)
def test_fused_ops_sharded_match_unsharded():
    r, _ = run_ranks(fused_sharded_on_rank, 2)
    assert r.summary(0)["checks"] >= 150


@pytest.mark.timeout(300)
def test_dtensor_basics_on_npu_mesh():
    """distribute_tensor, full_tensor, redistribute (Shard/Replicate/Partial), from_local/to_local, RNG."""
    _, results = run_ranks(basics_on_rank, 2)
    (rng,) = [r for r in results if r.get("kind") == "rng"]
    # each shard is the generator's draw at its DTensor offset (checked in the rank); npu's generator
    # does not continue a longer draw at an offset, so the whole differs from a single device's draw
    # (the limitation docs/dtensor.md names: update it if this changes)
    assert rng == {"kind": "rng", "sharded_equals_single_device": False}, rng
