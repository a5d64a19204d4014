"""Graph memory pools: outputs live in the graph's pool, pools are shared,
visible in memory stats and snapshots, and reset() gives the memory back.
make_graphed_callables. (Ported in our own words from test_cuda.py's
graph memory and make_graphed_callables cases.)"""
import gc

import pytest
import torch
import torch.nn as nn

import npudist  # noqa: F401  (registers npu when torch's backend autoload is off)
from npudist import _C

pytestmark = pytest.mark.timeout(300)

MiB = 1 << 20


def pool_bytes(pool):
    return _C._graph_pool_reserved_bytes(0, pool)


def test_outputs_come_from_private_pool_and_reset_frees():
    gc.collect()
    torch.npu.empty_cache()
    x = torch.ones(4 * MiB // 4, device="npu")
    reserved0 = torch.npu.memory_reserved()
    g = torch.npu.NPUGraph()
    with torch.npu.graph(g):
        y = x * 2
        z = y + 1
    pool = g.pool()
    assert pool_bytes(pool) >= 2 * 4 * MiB
    assert torch.npu.memory_reserved() >= reserved0 + 2 * 4 * MiB  # pools count in stats
    segs = [s for s in torch.npu.memory_snapshot() if tuple(s["segment_pool_id"]) == tuple(pool)]
    assert segs and sum(s["allocated_size"] for s in segs) >= 2 * 4 * MiB
    # empty_cache keeps a live graph's pool.
    del y
    torch.npu.empty_cache()
    assert pool_bytes(pool) >= 2 * 4 * MiB
    g.replay()
    assert torch.equal(z[:3].cpu(), torch.full((3,), 3.0))
    del z
    g.reset()
    gc.collect()
    assert pool_bytes(pool) == 0
    assert torch.npu.memory_reserved() <= reserved0


def test_pool_memory_held_by_user_outputs_returns_when_freed():
    x = torch.ones(MiB, device="npu")
    g = torch.npu.NPUGraph()
    with torch.npu.graph(g):
        out = x + 1
    pool = g.pool()
    g.reset()
    assert pool_bytes(pool) > 0  # `out` still lives there
    assert torch.equal(out[:2].cpu(), torch.zeros(2))  # captured, never replayed
    del out
    gc.collect()
    assert pool_bytes(pool) == 0


def test_shared_pool_between_graphs():
    x = torch.ones(MiB // 4, device="npu")
    pool = torch.npu.graph_pool_handle()
    assert pool[0] == 0 and pool[1] > 0
    g1, g2 = torch.npu.NPUGraph(), torch.npu.NPUGraph()
    with torch.npu.graph(g1, pool=pool):
        a = x * 3
    with torch.npu.graph(g2, pool=g1.pool()):
        b = a + 1  # consumes g1's output
    assert g1.pool() == g2.pool() == pool
    x.fill_(2)
    g1.replay()
    g2.replay()
    assert torch.equal(b[:2].cpu(), torch.full((2,), 7.0))
    held = pool_bytes(pool)
    g1.reset()
    assert pool_bytes(pool) == held  # g2 still uses the pool
    del a, b
    g2.reset()
    gc.collect()
    assert pool_bytes(pool) == 0


def test_pool_memory_reused_within_capture():
    x = torch.ones(MiB // 4, device="npu")
    g = torch.npu.NPUGraph()
    with torch.npu.graph(g):
        for _ in range(10):
            x = (x * 1.0001).contiguous()  # each intermediate dies right away
    # 10 temporaries of 1 MiB share blocks: far less than 10 MiB.
    assert pool_bytes(g.pool()) < 6 * MiB
    del x
    g.reset()


def test_make_graphed_callables_module_and_function():
    torch.manual_seed(0)
    m1 = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 8)).npu()
    r1 = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 8))
    r1.load_state_dict({k: v.cpu() for k, v in m1.state_dict().items()})

    def fn(a):
        return (a * a).sum(dim=1)

    x = torch.randn(4, 8, device="npu", requires_grad=True)
    h = torch.randn(4, 8, device="npu", requires_grad=True)
    gm1, gfn = torch.npu.make_graphed_callables((m1, fn), ((x,), (h,)))
    assert gm1 is m1
    for _ in range(3):
        xc = torch.randn(4, 8)
        xi = xc.npu().requires_grad_()
        mid = gm1(xi)
        out = gfn(mid)
        out.sum().backward()
        xr = xc.clone().requires_grad_()
        r_out = (r1(xr) * r1(xr)).sum(dim=1)
        for p in r1.parameters():
            p.grad = None
        xr2 = xc.clone().requires_grad_()
        ro = r1(xr2)
        ((ro * ro).sum(dim=1)).sum().backward()
        torch.testing.assert_close(out.detach().cpu(), r_out.detach(), rtol=1e-5, atol=1e-5)
        torch.testing.assert_close(xi.grad.cpu(), xr2.grad, rtol=1e-5, atol=1e-5)
        for p, q in zip(m1.parameters(), r1.parameters()):
            torch.testing.assert_close(p.grad.cpu(), q.grad, rtol=1e-5, atol=1e-5)
            p.grad = None
    # Eval mode runs the eager forward.
    m1.eval()
    with torch.no_grad():
        torch.testing.assert_close(m1(torch.ones(2, 8, device="npu")).cpu(), r1.eval()(torch.ones(2, 8)))


def test_make_graphed_callables_rejects_hooks_and_non_tensors():
    m = nn.Linear(2, 2).npu()
    m.register_forward_hook(lambda *a: None)
    with pytest.raises(RuntimeError, match="hooks"):
        torch.npu.make_graphed_callables(m, (torch.ones(1, 2, device="npu"),))
    with pytest.raises(TypeError, match="only tensors"):
        torch.npu.make_graphed_callables(lambda a, b: a, (torch.ones(1, device="npu"), 3))


def test_empty_capture_warns():
    g = torch.npu.NPUGraph()
    with pytest.warns(UserWarning, match="npu graph is empty"), torch.npu.graph(g):
        pass
    g.replay()  # does nothing


def test_successive_graphs_sharing_a_pool_replay_in_capture_order():
    # Three graphs in one pool, each consuming the previous one's output (test_cuda's
    # "three successive" case): replaying in capture order gives the eager result.
    x = torch.full((1000,), 2.0, device="npu")
    pool = torch.npu.graph_pool_handle()
    gs = [torch.npu.NPUGraph() for _ in range(3)]
    with torch.npu.graph(gs[0], pool=pool):
        a = x * 2
        tmp = a + 1  # a temporary whose block later graphs may reuse
        b = tmp * 3
        del tmp
    with torch.npu.graph(gs[1], pool=pool):
        c = b - 1
    with torch.npu.graph(gs[2], pool=pool):
        d = c / 2
    for v in (1.0, 5.0):
        x.fill_(v)
        for g in gs:
            g.replay()
        assert torch.allclose(d.cpu(), torch.full((1000,), ((v * 2 + 1) * 3 - 1) / 2))
