"""scaled_dot_product_attention on npu meshes, each against single-device attention on the whole
input, forward and backward (the ranks run ``attention_on_rank``):
- DTensor attention with is_causal=True on head-sharded q/k/v ([Shard(1)]): the reproduction
  (it raised "aten.add.Tensor: got mixed torch.Tensor and DTensor" on the math path);
- context_parallel() ring attention over all ranks (causal with load balancing, and non-causal);
- on 4 ranks, FSDP2 x TP (a (dp, tp) = (2, 2) mesh) training a causal-attention transformer whose
  attention runs on DTensors, against the single-process model: losses of 3 steps."""
import copy

import pytest
import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.tensor import DTensor, Shard, distribute_tensor
from torch.distributed.tensor.experimental import context_parallel
from torch.distributed.tensor.experimental._attention import _cp_options, context_parallel_unshard
from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module
from torch.nn.attention import SDPBackend, sdpa_kernel

from . import Checker, run_ranks


def attention_on_rank():
    """Runs on every rank (the gloo+hccl group is up); one Checker summary."""
    WORLD = dist.get_world_size()
    chk = Checker(rtol=2e-5, atol=2e-5)
    mesh = init_device_mesh("npu", (WORLD,), mesh_dim_names=("cp",))

    def inputs(b, h, seq, d, seed):
        """q, k, v and the output's gradient: equal on every rank."""
        g = torch.Generator().manual_seed(seed)
        return [torch.randn(b, h, seq, d, generator=g).npu() for _ in range(4)]

    def reference(q, k, v, grad_out, **kw):
        q, k, v = (t.detach().clone().requires_grad_(True) for t in (q, k, v))
        out = F.scaled_dot_product_attention(q, k, v, **kw)
        out.backward(grad_out)
        return out.detach(), q.grad, k.grad, v.grad

    # 1. DTensor attention, heads sharded, causal (the reproduction).
    def dtensor_heads_causal():
        q, k, v, grad_out = inputs(2, 2 * WORLD, 24, 16, seed=1)
        want = reference(q, k, v, grad_out, is_causal=True)
        dq, dk, dv = (distribute_tensor(t, mesh, [Shard(1)]).requires_grad_(True) for t in (q, k, v))
        out = F.scaled_dot_product_attention(dq, dk, dv, is_causal=True)
        chk.true(isinstance(out, DTensor) and out.placements == (Shard(1),), "output stays head-sharded",
                 f"{type(out).__name__} {getattr(out, 'placements', None)}")
        out.backward(distribute_tensor(grad_out, mesh, [Shard(1)]))
        for name, got, w in zip(("out", "grad_q", "grad_k", "grad_v"), (out, dq.grad, dk.grad, dv.grad), want):
            chk.close(got.full_tensor(), w, f"DTensor causal attention {name}")

    chk.run("DTensor SDPA is_causal on a head-sharded mesh", dtensor_heads_causal)

    # 2. Context parallelism: ring attention over the sequence, equal to one device's attention.
    def ring(is_causal):
        # Each rank's chunk (and, load-balanced, each half of it) a multiple of 32 rows: ring attention merges
        # log-sum-exps assuming one per row, and the efficient op pads them to 32 (as CUDA's does).
        seq = 64 * WORLD
        q, k, v, grad_out = inputs(1, 2, seq, 16, seed=2)
        want = reference(q, k, v, grad_out, is_causal=is_causal)
        cq, ck, cv, cg = (t.clone() for t in (q, k, v, grad_out))
        _cp_options.enable_load_balance = is_causal  # round-robin load balancing exists for causal masks only
        with context_parallel(mesh, buffers=[cq, ck, cv, cg], buffer_seq_dims=[2, 2, 2, 2]):
            for t in (cq, ck, cv):
                t.requires_grad_(True)
            with sdpa_kernel([SDPBackend.EFFICIENT_ATTENTION]):
                out = F.scaled_dot_product_attention(cq, ck, cv, is_causal=is_causal)
            out.backward(cg)
            for t in (cq, ck, cv):  # context_parallel restores the buffers' shapes on exit
                t.requires_grad_(False)
        got = context_parallel_unshard(mesh, [out.detach(), cq.grad, ck.grad, cv.grad], [2, 2, 2, 2])
        for name, g, w in zip(("out", "grad_q", "grad_k", "grad_v"), got, want):
            chk.close(g, w, f"context_parallel ({WORLD} ranks, is_causal={is_causal}) {name}")

    chk.run("context_parallel causal", ring, True)
    chk.run("context_parallel non-causal", ring, False)

    # 3. FSDP2 x TP training on a (2, 2) mesh, attention on DTensors with is_causal=True.
    class Attention(torch.nn.Module):
        def __init__(self, dim=32, heads=4):
            super().__init__()
            self.heads, self.hd = heads, dim // heads
            self.wq, self.wk, self.wv, self.wo = (torch.nn.Linear(dim, dim, bias=False) for _ in range(4))

        def forward(self, x):
            b, s, _ = x.shape
            q, k, v = (w(x).view(b, s, -1, self.hd).transpose(1, 2) for w in (self.wq, self.wk, self.wv))
            o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            return self.wo(o.transpose(1, 2).reshape(b, s, -1))

    class Model(torch.nn.Module):
        def __init__(self, dim=32, layers=2):
            super().__init__()
            self.layers = torch.nn.ModuleList(Attention(dim) for _ in range(layers))
            self.head = torch.nn.Linear(dim, 16)

        def forward(self, x):
            for layer in self.layers:
                x = x + layer(x)
            return self.head(x)

    def fsdp_tp():
        mesh2 = init_device_mesh("npu", (2, 2), mesh_dim_names=("dp", "tp"))
        torch.manual_seed(0)
        base = Model().npu()
        X, Y = torch.randn(4, 8, 32).npu(), torch.randn(4, 8, 16).npu()
        dp = mesh2["dp"].get_local_rank()

        def train(model, x, y, distributed):
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            losses = []
            for _ in range(3):
                loss = F.mse_loss(model(x), y)
                loss.backward()
                opt.step()
                opt.zero_grad()
                if distributed:
                    loss = loss.detach().clone()
                    dist.all_reduce(loss, group=mesh2["dp"].get_group())
                    loss /= 2
                losses.append(loss.item())
            return losses

        want = train(copy.deepcopy(base), X, Y, False)
        model = copy.deepcopy(base)
        plan = {}
        for i in range(len(model.layers)):
            p = f"layers.{i}."
            # q/k/v stay DTensors (sharded on heads after the view): attention runs through DTensor's SDPA strategy.
            plan.update({p + n: ColwiseParallel(use_local_output=False) for n in ("wq", "wk", "wv")})
            plan[p + "wo"] = RowwiseParallel(input_layouts=Shard(-1))
        model = parallelize_module(model, mesh2["tp"], plan)
        for layer in model.layers:
            fully_shard(layer, mesh=mesh2["dp"])
        fully_shard(model, mesh=mesh2["dp"])
        got = train(model, X.chunk(2)[dp], Y.chunk(2)[dp], True)
        chk.close(torch.tensor(got), torch.tensor(want), "FSDP2 x TP losses (3 steps) vs single process", rtol=1e-4,
                  atol=1e-5)
        chk.true(got[-1] < got[0], "FSDP2 x TP loss goes down", str(got))

    if WORLD == 4:
        from torch.distributed.fsdp import fully_shard

        chk.run("FSDP2 x TP training with causal DTensor attention", fsdp_tp)

    chk.report()


@pytest.mark.timeout(400)
def test_dtensor_causal_and_context_parallel_2_ranks():
    run_ranks(attention_on_rank, 2)


@pytest.mark.timeout(600)
def test_dtensor_causal_context_parallel_and_fsdp_tp_4_ranks():
    run_ranks(attention_on_rank, 4, timeout=500)
