"""torch.compile(backend="npugraphs"): Inductor's code replayed through npu graphs.

Every check compares with eager npu and also asserts that graphs were really captured and
replayed (torch._dynamo.utils.counters["npugraphs"]), so a silent run without graphs fails.
Models are tiny: each compile costs seconds on 2 cores (Inductor's FX graph cache helps reruns).
"""
import warnings

import pytest
import torch
import torch._dynamo
from torch._dynamo.utils import counters
from torch._inductor import metrics

import npudist  # noqa: F401  (registers npu when torch's backend autoload is off)

from ._models import MLP

pytestmark = pytest.mark.timeout(600)


@pytest.fixture(autouse=True)
def fresh_dynamo():
    torch._dynamo.reset()
    metrics.reset()
    counters.clear()
    yield
    torch._dynamo.reset()


def _stats():
    return dict(counters["npugraphs"])


def _pair(**kw):
    torch.manual_seed(0)
    eager = MLP(**kw).npu()
    graphed = MLP(**kw).npu()
    graphed.load_state_dict(eager.state_dict())
    return eager, graphed


def test_backend_is_registered_under_torch_npus_name():
    assert "npugraphs" in torch._dynamo.list_backends()


def test_training_steps_match_eager_and_replay():
    """Forward, backward and an optimizer step for 5 steps with new inputs each step: losses,
    gradients and parameters equal eager's; from the second step on, forward and backward replay."""
    eager, graphed = _pair()
    model = torch.compile(graphed, backend="npugraphs")
    opt_e = torch.optim.SGD(eager.parameters(), lr=0.1)
    opt_g = torch.optim.SGD(graphed.parameters(), lr=0.1)
    for step in range(5):
        x = torch.randn(8, 16, device="npu")
        loss_g = model(x).square().mean()
        loss_g.backward()
        loss_e = eager(x).square().mean()
        loss_e.backward()
        torch.testing.assert_close(loss_g, loss_e, rtol=1e-5, atol=1e-6, msg=lambda m: f"step {step}: {m}")
        for p, q in zip(graphed.parameters(), eager.parameters()):
            torch.testing.assert_close(p.grad, q.grad, rtol=1e-5, atol=1e-6)
        opt_g.step(), opt_e.step()
        opt_g.zero_grad(), opt_e.zero_grad()
    s = _stats()
    assert metrics.generated_kernel_count > 0
    assert s["capture"] == 2, s  # one forward graph, one backward graph
    assert s["replay"] == 2 * 4, s  # steps 2..5, forward and backward
    assert s.get("fallback", 0) == 0, s


def test_inference_replays_with_new_input_values():
    _, graphed = _pair()
    model = torch.compile(graphed, backend="npugraphs")
    with torch.no_grad():
        for _ in range(4):
            x = torch.randn(8, 16, device="npu")
            torch.testing.assert_close(model(x), graphed(x), rtol=1e-5, atol=1e-6)
    assert _stats()["replay"] == 3  # calls 2-4 (call 1 warms up)


def test_outputs_are_valid_until_the_next_replay():
    """CUDA-graph semantics: an output is the graph's memory, so the next replay overwrites it
    (documented); a clone survives."""
    f = torch.compile(lambda x: x * 2 + 1, backend="npugraphs")
    a, b, c = (torch.full((4,), float(v), device="npu") for v in (1, 2, 3))
    f(a), f(a)  # warm-up, capture
    out_b = f(b)
    kept = out_b.clone()
    f(c)
    torch.testing.assert_close(kept, torch.full((4,), 5.0, device="npu"))
    torch.testing.assert_close(out_b, torch.full((4,), 7.0, device="npu"))  # overwritten by the replay for c


def test_two_forwards_before_backward_give_correct_gradients():
    """The second forward would overwrite activations the first one's pending backward needs:
    it runs without replay (one UserWarning), and both backwards are right."""
    eager, graphed = _pair()
    model = torch.compile(graphed, backend="npugraphs")
    for _ in range(2):  # warm-up and capture
        model(torch.randn(8, 16, device="npu")).sum().backward()
    graphed.zero_grad()
    x1, x2 = torch.randn(8, 16, device="npu"), torch.randn(8, 16, device="npu")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        l1 = model(x1).square().sum()
        l2 = model(x2).square().sum()
        (l1 + 2 * l2).backward()
    assert any("still in use" in str(w.message) for w in caught), [str(w.message) for w in caught]
    (eager(x1).square().sum() + 2 * eager(x2).square().sum()).backward()
    for p, q in zip(graphed.parameters(), eager.parameters()):
        torch.testing.assert_close(p.grad, q.grad, rtol=1e-5, atol=1e-5)
    assert _stats()["fallback"] >= 1


def test_gradients_kept_between_steps_accumulate_correctly():
    """zero_grad(set_to_none=False) keeps the gradient tensors the backward returned: the
    backward must not overwrite them in place (it runs without replay then), sums stay right."""
    eager, graphed = _pair()
    model = torch.compile(graphed, backend="npugraphs")
    xs = [torch.randn(8, 16, device="npu") for _ in range(4)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for x in xs:
            model(x).sum().backward()
    for x in xs:
        eager(x).sum().backward()
    for p, q in zip(graphed.parameters(), eager.parameters()):
        torch.testing.assert_close(p.grad, q.grad, rtol=1e-5, atol=1e-5)


def test_new_sizes_get_their_own_graphs():
    def f(x):
        return torch.nn.functional.gelu(x * 2 + 1).sum(-1)

    g = torch.compile(f, backend="npugraphs")
    for n in (4, 6, 9, 6, 9, 6, 4):
        x = torch.randn(n, 8, device="npu")
        torch.testing.assert_close(g(x), f(x), rtol=1e-5, atol=1e-5)
    assert _stats()["replay"] >= 2


def test_mutated_input_is_written_back():
    def f(x, y):
        x.add_(y)
        return x * 2

    g = torch.compile(f, backend="npugraphs")
    for _ in range(4):
        x, y = torch.randn(16, device="npu"), torch.randn(16, device="npu")
        x_ref = x.clone()
        out = g(x, y)
        torch.testing.assert_close(x, x_ref + y)
        torch.testing.assert_close(out, (x_ref + y) * 2)
    assert _stats()["replay"] == 3  # calls 2-4 (call 1 warms up)


def test_parameters_updated_in_place_are_read_by_the_replay():
    lin = torch.nn.Linear(8, 4).npu()
    g = torch.compile(lin, backend="npugraphs")
    x = torch.randn(2, 8, device="npu")
    with torch.no_grad():
        for _ in range(4):
            lin.weight.add_(1.0)
            torch.testing.assert_close(g(x), lin(x))


def test_compiled_code_captured_by_torch_npu_graph():
    """Inductor's C++ kernels are launched through npudist's launcher, so an explicit capture
    of a torch.compile'd function (backend="inductor") records them too."""
    def f(x, y):
        return (x.sin() * y + 1).relu().sum(0)

    cf = torch.compile(f)
    x, y = torch.randn(32, 16, device="npu"), torch.randn(32, 16, device="npu")
    cf(x, y)
    g = torch.npu.NPUGraph()
    with torch.npu.graph(g):
        out = cf(x, y)
    for _ in range(2):
        x.copy_(torch.randn(32, 16))
        g.replay()
        torch.testing.assert_close(out, f(x, y), rtol=1e-5, atol=1e-5)


def test_reduce_overhead_warning_names_the_npugraphs_backend():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        g = torch.compile(lambda x: (x * 3).tanh(), mode="reduce-overhead")
        g(torch.randn(8, device="npu"))
    ours = [str(w.message) for w in caught if "reduce-overhead" in str(w.message)]
    assert len(ours) == 1 and "backend='npugraphs'" in ours[0], ours


def test_random_ops_differ_per_replay_and_repeat_after_manual_seed():
    """Inductor's seeds come from an npu random op, which the capture records with the npu
    generator: each replay draws new numbers, and manual_seed makes the sequence repeat."""
    f = torch.compile(lambda x: torch.nn.functional.dropout(x, 0.5, training=True), backend="npugraphs")
    x = torch.ones(256, device="npu")
    f(x), f(x)  # warm-up, capture
    masks = [f(x).clone() for _ in range(3)]
    assert len({tuple(m.tolist()) for m in masks}) == 3
    torch.npu.manual_seed(3)
    a = [f(x).clone() for _ in range(2)]
    torch.npu.manual_seed(3)
    b = [f(x).clone() for _ in range(2)]
    assert all(torch.equal(p, q) for p, q in zip(a, b))
    assert _stats()["replay"] >= 8
