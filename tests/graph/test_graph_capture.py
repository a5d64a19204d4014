"""Capture and replay: replay equals eager (MLP, transformer block, training
step), the in-place rule, RNG rules, torch.accelerator.Graph, side streams.
Ported in our own words from the graph cases of PyTorch's test/test_cuda.py
where they apply to npu."""
import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import npudist  # noqa: F401  (registers npu when torch's backend autoload is off)

pytestmark = pytest.mark.timeout(300)


def capture(fn, *args, pool=None, mode="global"):
    g = torch.npu.NPUGraph()
    with torch.npu.graph(g, pool=pool, capture_error_mode=mode):
        out = fn(*args)
    return g, out


def warmup(fn, *args, n=2):
    s = torch.npu.Stream()
    s.wait_stream(torch.npu.current_stream())
    with torch.npu.stream(s):
        for _ in range(n):
            fn(*args)
    torch.npu.current_stream().wait_stream(s)


def test_capture_does_not_run_and_replay_applies_inplace_once():
    x = torch.zeros(5, device="npu")
    g, _ = capture(lambda: x.add_(1))
    assert torch.equal(x.cpu(), torch.zeros(5))  # capture records, it does not run
    for _ in range(3):
        g.replay()
    assert torch.equal(x.cpu(), torch.full((5,), 3.0))


def test_static_input_output():
    static_in = torch.randn(16, 8, device="npu")
    g, out = capture(lambda: (static_in * 2).sin() + static_in.mean(dim=0))
    for _ in range(3):
        new = torch.randn(16, 8)
        static_in.copy_(new.npu())
        g.replay()
        torch.testing.assert_close(out.cpu(), (new * 2).sin() + new.mean(dim=0))


def test_mlp_forward_backward_matches_eager():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(32, 64), nn.GELU(), nn.Linear(64, 32), nn.LayerNorm(32)).npu()
    ref = nn.Sequential(nn.Linear(32, 64), nn.GELU(), nn.Linear(64, 32), nn.LayerNorm(32))
    ref.load_state_dict({k: v.cpu() for k, v in model.state_dict().items()})
    x = torch.randn(8, 32, device="npu")

    def step():
        for p in model.parameters():
            p.grad = None
        loss = model(x).pow(2).mean()
        loss.backward()
        return loss

    warmup(step)
    for p in model.parameters():
        p.grad = None  # captured backward then writes fresh gradients (no accumulation across replays)
    g = torch.npu.NPUGraph()
    with torch.npu.graph(g):
        loss = model(x).pow(2).mean()
        loss.backward()
    for _ in range(3):
        xc = torch.randn(8, 32)
        x.copy_(xc.npu())
        g.replay()
        for p in ref.parameters():
            p.grad = None
        rl = ref(xc).pow(2).mean()
        rl.backward()
        torch.testing.assert_close(loss.cpu(), rl.detach())
        for p, q in zip(model.parameters(), ref.parameters()):
            torch.testing.assert_close(p.grad.cpu(), q.grad)


class Block(nn.Module):
    def __init__(self, d=32, heads=4):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.ln2 = nn.LayerNorm(d)
        self.fc = nn.Linear(d, 4 * d)
        self.out = nn.Linear(4 * d, d)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=-1)  # views
        q = q.view(b, t, self.heads, -1).transpose(1, 2)
        k = k.view(b, t, self.heads, -1).transpose(1, 2)
        v = v.view(b, t, self.heads, -1).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) / (q.shape[-1] ** 0.5)
        mask = torch.ones(t, t, dtype=torch.bool, device=x.device).tril()
        att = att.masked_fill(~mask, float("-inf")).softmax(-1)
        y = (att @ v).transpose(1, 2).reshape(b, t, d)
        x = x + self.proj(y)
        h = self.fc(self.ln2(x))
        h.mul_(torch.sigmoid(1.702 * h))  # in-place on an intermediate
        x = x + self.out(h)
        return x


def test_transformer_block_with_views_and_inplace_matches_eager():
    torch.manual_seed(1)
    blk = Block().npu()
    ref = Block()
    ref.load_state_dict({k: v.cpu() for k, v in blk.state_dict().items()})
    x = torch.randn(2, 8, 32, device="npu", requires_grad=True)

    def run():
        y = blk(x)
        y.sum().backward()
        return y

    warmup(run)
    x.grad = None
    for p in blk.parameters():
        p.grad = None
    g = torch.npu.NPUGraph()
    with torch.npu.graph(g):
        y = blk(x)
        y.sum().backward()
    xc = torch.randn(2, 8, 32)
    with torch.no_grad():
        x.copy_(xc.npu())
    for p in blk.parameters():
        p.grad.zero_()
    x.grad.zero_()
    g.replay()
    xr = xc.clone().requires_grad_()
    yr = ref(xr)
    yr.sum().backward()
    torch.testing.assert_close(y.detach().cpu(), yr.detach(), rtol=1e-5, atol=1e-5)
    # Gradients accumulate into .grad (in place): zeroed then one replay.
    torch.testing.assert_close(x.grad.cpu(), xr.grad, rtol=1e-5, atol=1e-5)
    for p, q in zip(blk.parameters(), ref.parameters()):
        torch.testing.assert_close(p.grad.cpu(), q.grad, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("opt_cls", [torch.optim.AdamW, torch.optim.Adam])
def test_training_step_with_capturable_optimizer(opt_cls):
    torch.manual_seed(2)
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4)).npu()
    ref = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))
    ref.load_state_dict({k: v.cpu() for k, v in model.state_dict().items()})
    opt = opt_cls(model.parameters(), lr=1e-2, capturable=True)
    ref_opt = opt_cls(ref.parameters(), lr=1e-2)
    data = [(torch.randn(8, 16), torch.randn(8, 4)) for _ in range(8)]
    sx = torch.zeros(8, 16, device="npu")
    sy = torch.zeros(8, 4, device="npu")

    def step():
        opt.zero_grad(set_to_none=False)
        loss = F.mse_loss(model(sx), sy)
        loss.backward()
        opt.step()
        return loss

    # Warm-up steps are real steps: mirror them on the reference.
    s = torch.npu.Stream()
    s.wait_stream(torch.npu.current_stream())
    with torch.npu.stream(s):
        for xb, yb in data[:3]:
            sx.copy_(xb.npu())
            sy.copy_(yb.npu())
            step()
    torch.npu.current_stream().wait_stream(s)
    for xb, yb in data[:3]:
        ref_opt.zero_grad()
        F.mse_loss(ref(xb), yb).backward()
        ref_opt.step()

    g = torch.npu.NPUGraph()
    with torch.npu.graph(g):
        loss = step()
    for xb, yb in data[3:]:
        sx.copy_(xb.npu())
        sy.copy_(yb.npu())
        g.replay()
        ref_opt.zero_grad()
        rl = F.mse_loss(ref(xb), yb)
        rl.backward()
        ref_opt.step()
        torch.testing.assert_close(loss.cpu(), rl.detach(), rtol=1e-5, atol=1e-6)
    for p, q in zip(model.parameters(), ref.parameters()):
        torch.testing.assert_close(p.detach().cpu(), q.detach(), rtol=1e-5, atol=1e-6)


def test_rng_replays_differ_and_repeat_after_manual_seed():
    g, r = capture(lambda: torch.rand(64, device="npu") + torch.randn(64, device="npu") * 0)
    g.replay()
    a = r.clone()
    g.replay()
    assert not torch.equal(a, r)
    torch.npu.manual_seed(123)
    seq1 = []
    for _ in range(3):
        g.replay()
        seq1.append(r.clone())
    torch.npu.manual_seed(123)
    for expected in seq1:
        g.replay()
        assert torch.equal(r, expected)
    assert not torch.equal(seq1[0], seq1[1])


def test_rng_dropout_and_generator_offset_advances():
    x = torch.ones(1000, device="npu")
    gen = torch.npu.default_generators[0]
    g, y = capture(lambda: F.dropout(x, p=0.5, training=True))
    before = gen.get_offset()
    g.replay()
    assert gen.get_offset() > before  # each replay takes its own share
    vals = set(y.unique().cpu().tolist())
    assert vals <= {0.0, 2.0} and len(vals) == 2


def test_explicit_generator_and_two_graphs_share_state():
    gen = torch.Generator(device="npu")
    gen.manual_seed(7)
    g1, a = capture(lambda: torch.rand(8, device="npu", generator=gen))
    g2, b = capture(lambda: torch.rand(8, device="npu", generator=gen))
    g1.replay()
    g2.replay()
    first = (a.clone(), b.clone())
    gen.manual_seed(7)
    g1.replay()
    g2.replay()
    assert torch.equal(a, first[0]) and torch.equal(b, first[1])
    assert not torch.equal(a, b)  # g2 drew after g1's share


def test_accelerator_graph_context_manager():
    x = torch.zeros(4, device="npu")
    s = torch.Stream(device="npu")
    g = torch.accelerator.Graph()
    with s, g:
        x.add_(2)
        y = x * 3
    assert torch.equal(x.cpu(), torch.zeros(4))
    g.replay()
    g.replay()
    assert torch.equal(x.cpu(), torch.full((4,), 4.0))
    assert torch.equal(y.cpu(), torch.full((4,), 12.0))
    assert isinstance(g.pool(), tuple)


@pytest.mark.parametrize("mode", ["default", "global", "thread_local", "relaxed"])
def test_accelerator_graph_modes(mode):
    x = torch.ones(3, device="npu")
    s = torch.Stream(device="npu")
    g = torch.accelerator.Graph(capture_error_mode=mode)
    with s, g:
        x.mul_(2)
    g.replay()
    assert torch.equal(x.cpu(), torch.full((3,), 2.0))


def test_keep_graph_instantiate_and_reset_recapture():
    x = torch.zeros(2, device="npu")
    g = torch.npu.NPUGraph(keep_graph=True)
    with torch.npu.graph(g):
        x.add_(1)
    g.replay()  # instantiates on first replay
    g.instantiate()
    g.replay()
    assert torch.equal(x.cpu(), torch.full((2,), 2.0))
    g.reset()
    with pytest.raises(RuntimeError, match="no completed capture"):
        g.replay()
    with torch.npu.graph(g):
        x.add_(10)
    g.replay()
    assert torch.equal(x.cpu(), torch.full((2,), 12.0))


def test_is_capturing_reports():
    assert not torch.npu.is_current_stream_capturing()
    seen = []
    g = torch.npu.NPUGraph()
    with torch.npu.graph(g):
        seen.append(torch.npu.is_current_stream_capturing())
        seen.append(torch.npu.current_stream().is_capturing())
        seen.append(torch.npu.default_stream().is_capturing())
    assert seen == [True, True, False]
    assert not torch.npu.is_current_stream_capturing()


def test_side_stream_fork_join():
    x = torch.ones(4, device="npu")
    g = torch.npu.NPUGraph()
    with torch.npu.graph(g):
        main = torch.npu.current_stream()
        side = torch.npu.Stream()
        side.wait_stream(main)
        with torch.npu.stream(side):
            a = x * 2
            assert side.is_capturing()
        b = x + 1
        main.wait_stream(side)
        c = a + b
    assert not side.is_capturing()
    x.fill_(3)
    g.replay()
    assert torch.equal(c.cpu(), torch.full((4,), 3 * 2 + 3 + 1.0))


def test_replay_interleaves_with_eager_work():
    x = torch.zeros(3, device="npu")
    g, y = capture(lambda: x + 1)
    for i in range(3):
        x.fill_(float(i))
        g.replay()
        assert torch.equal(y.cpu(), torch.full((3,), i + 1.0))


def test_debug_dump(tmp_path):
    x = torch.ones(3, device="npu")
    g = torch.npu.NPUGraph()
    g.enable_debug_mode()
    with torch.npu.graph(g):
        _y = (x * 2).relu()
    path = tmp_path / "g.dot"
    g.debug_dump(str(path))
    text = path.read_text()
    assert text.startswith("digraph") and "aten::mul" in text and "aten::relu" in text
    g2, _ = capture(lambda: x + 1)
    with pytest.raises(RuntimeError, match="enable_debug_mode"):
        g2.debug_dump(str(path))


_RNG_CASES = {
    "uniform_": lambda x, p: torch.empty(256, device="npu").uniform_(),
    "normal_": lambda x, p: torch.empty(256, device="npu").normal_(2.0, 3.0),
    "randn": lambda x, p: torch.randn(256, device="npu"),
    "bernoulli_p": lambda x, p: torch.bernoulli(x * 0.3),
    "bernoulli_": lambda x, p: torch.empty(256, device="npu").bernoulli_(0.5),
    "random_": lambda x, p: torch.empty(256, device="npu").random_(0, 10),
    "randint": lambda x, p: torch.randint(0, 10, (256,), device="npu"),
    "exponential_": lambda x, p: torch.empty(256, device="npu").exponential_(),
    "normal_tensor": lambda x, p: torch.normal(x, 2.0),
    "multinomial": lambda x, p: torch.multinomial(p, 3),
    "randperm": lambda x, p: torch.randperm(50, device="npu"),
    "rand_like": lambda x, p: torch.rand_like(x),
}


@pytest.mark.parametrize("name", sorted(_RNG_CASES))
def test_rng_distributions_in_graph(name):
    x = torch.ones(256, device="npu")
    p = torch.full((4, 10), 0.1, device="npu")
    g, y = capture(_RNG_CASES[name], x, p)
    torch.npu.manual_seed(3)
    g.replay()
    a = y.clone()
    g.replay()
    b = y.clone()
    torch.npu.manual_seed(3)
    g.replay()
    assert not torch.equal(a, b)
    assert torch.equal(y, a)
