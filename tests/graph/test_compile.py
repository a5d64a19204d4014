"""torch.compile on npu: Inductor compiles npu graphs with its C++ code generator.

Each test compiles a tiny model in this process (Inductor's FX graph cache is on, so a second
run is fast). Values are compared with eager npu; generated kernels must have run (never a
silent eager fallback), buffers must come from the npu allocator.
"""
import warnings

import pytest
import torch
import torch._dynamo
from torch._inductor import metrics

import npudist  # noqa: F401  (registers npu when torch's backend autoload is off)
from npudist.testing.models import DecoderBlock

from ._models import MLP

pytestmark = pytest.mark.timeout(600)


@pytest.fixture(autouse=True)
def fresh_dynamo():
    torch._dynamo.reset()
    metrics.reset()
    yield
    torch._dynamo.reset()


def _pair(cls, **kw):
    torch.manual_seed(0)
    eager = cls(**kw).npu()
    compiled = cls(**kw).npu()
    compiled.load_state_dict(eager.state_dict())
    return eager, compiled


def _check_fwd_bwd(eager, compiled_module, x, rtol=1e-5, atol=1e-5):
    compiled = torch.compile(compiled_module)
    y = compiled(x)
    assert y.device.type == "npu"
    y.square().sum().backward()
    y_ref = eager(x)
    y_ref.square().sum().backward()
    torch.testing.assert_close(y, y_ref, rtol=rtol, atol=atol)
    for (name, p), q in zip(compiled_module.named_parameters(), eager.parameters()):
        assert p.grad is not None and p.grad.device.type == "npu", name
        torch.testing.assert_close(p.grad, q.grad, rtol=rtol, atol=atol, msg=lambda m: f"grad of {name}: {m}")
    return compiled


def test_mlp_forward_backward_match_eager():
    eager, module = _pair(MLP)
    x = torch.randn(8, 16, device="npu")
    _check_fwd_bwd(eager, module, x)
    assert metrics.generated_kernel_count > 0


def test_transformer_block_forward_backward_match_eager():
    eager, module = _pair(DecoderBlock)
    x = torch.randn(2, 8, 16, device="npu")
    _check_fwd_bwd(eager, module, x, rtol=1e-4, atol=1e-5)
    assert metrics.generated_kernel_count > 0


def test_new_shape_recompiles_as_on_cpu():
    """A second shape recompiles (as on cpu: dynamic=None marks the changed dim dynamic); a
    third shape reuses the dynamic graph. Same frame-compile counts on cpu and npu."""
    from torch._dynamo.testing import CompileCounterWithBackend

    def f(x):
        return torch.nn.functional.gelu(x * 2 + 1).sum(-1)

    counts = {}
    for device in ("cpu", "npu"):
        torch._dynamo.reset()
        counter = CompileCounterWithBackend("inductor")
        g = torch.compile(f, backend=counter)
        for n in (4, 6, 9):
            x = torch.randn(n, 8, device=device)
            torch.testing.assert_close(g(x), f(x), rtol=1e-5, atol=1e-5)
        counts[device] = counter.frame_count
    assert counts["npu"] == counts["cpu"] == 2, counts


def test_generated_kernels_ran_and_no_pointwise_op_fell_back():
    """The compiled call runs Inductor's kernels: the profiler sees no pointwise aten op on the
    npu device inside it (eager npu runs each through the fallback and the profiler sees all)."""
    def f(x, y):
        return torch.relu(x * y + 1).exp().sum(0)

    x = torch.randn(64, 32, device="npu")
    y = torch.randn(64, 32, device="npu")
    g = torch.compile(f)
    torch.testing.assert_close(g(x, y), f(x, y))
    assert metrics.generated_kernel_count > 0

    def pointwise_ops(fn):
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
            fn(x, y)
        names = set()
        for event in prof.events():
            if not event.name.startswith("aten::"):
                continue
            packet = getattr(torch.ops.aten, event.name[len("aten::"):], None)
            if packet is None:
                continue
            if any(torch.Tag.pointwise in getattr(packet, o).tags for o in packet.overloads()):
                names.add(event.name)
        return names

    assert pointwise_ops(f) >= {"aten::mul", "aten::add", "aten::relu", "aten::exp"}  # the probe sees them
    assert pointwise_ops(g) == set()


def test_buffers_come_from_the_npu_allocator():
    def f(x):
        a = (x + 1).sin()  # intermediate buffers, then an output
        return a @ a.t(), a.cos()

    x = torch.randn(256, 256, device="npu")
    g = torch.compile(f)
    g(x)  # compile
    torch.npu.synchronize()
    before = torch.npu.memory_allocated()
    out, out2 = g(x)
    assert out.device.type == "npu" and out2.device.type == "npu"
    # both outputs (256x256 fp32 each) live in npu memory
    assert torch.npu.memory_allocated() - before >= 2 * 256 * 256 * 4
    assert torch.npu.memory_stats()["allocation.all.allocated"] > 0
    del out, out2
    assert torch.npu.memory_allocated() == before
    torch.testing.assert_close(g(x)[1], f(x)[1])


def test_reduce_overhead_warns_once_with_the_reason():
    """One UserWarning per compiled frame (forward-only here), also when the same graph is
    compiled again (npu graphs under reduce-overhead are never served from Inductor's caches).
    A fresh cache directory keeps entries written by older builds out of the test."""
    from torch._inductor.utils import fresh_cache

    def f(x):
        return (x * 3).tanh()

    x = torch.randn(8, device="npu")
    with fresh_cache():
        for attempt in range(2):
            torch._dynamo.reset()
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                g = torch.compile(f, mode="reduce-overhead")
                torch.testing.assert_close(g(x), f(x))
                g(x)
            ours = [w for w in caught if issubclass(w.category, UserWarning) and "reduce-overhead" in str(w.message)]
            assert len(ours) == 1, (attempt, [str(w.message) for w in caught])
            assert "NPUGraph" in str(ours[0].message) and "npu" in str(ours[0].message)


def test_mixed_cpu_and_npu_graph():
    """A graph that reads a cpu scalar tensor and npu tensors compiles (cpu nodes get the cpu backend)."""
    def f(x, s):
        return x * s.to(x.device) + x.sum()

    x = torch.randn(16, device="npu")
    s = torch.tensor(3.0)
    torch.testing.assert_close(torch.compile(f)(x, s), f(x, s))
