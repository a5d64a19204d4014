"""Each npu fused op on DTensors (npu mesh over hccl), for each placement its sharding strategy offers:
outputs and gradients equal the unsharded op's, and sharded inputs stay sharded (no all-gather)."""

import torch
from common import WORLD, Checker, init
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.tensor import Replicate, Shard, distribute_tensor

chk = Checker()
init()
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
chk.finish()
