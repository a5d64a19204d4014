"""Every capture error: it names the op, invalidates the capture (capture_end
then raises), and nothing wrong is computed. Error modes as in CUDA."""
import threading

import pytest
import torch

import npudist  # noqa: F401  (registers npu when torch's backend autoload is off)

pytestmark = pytest.mark.timeout(300)


def begin(mode="global"):
    g = torch.npu.NPUGraph()
    s = torch.npu.Stream()
    ctx = torch.npu.stream(s)
    ctx.__enter__()
    g.capture_begin(capture_error_mode=mode)
    return g, ctx


def end_expect_invalid(g, ctx, reason):
    with pytest.raises(RuntimeError, match="capture failed and was discarded") as e:
        g.capture_end()
    assert reason in str(e.value)
    ctx.__exit__(None, None, None)
    assert not torch.npu.is_current_stream_capturing()
    with pytest.raises(RuntimeError, match="no completed capture"):
        g.replay()


def test_capture_on_default_stream():
    g = torch.npu.NPUGraph()
    with pytest.raises(RuntimeError, match="default stream is not allowed"):
        g.capture_begin()


@pytest.mark.parametrize(
    "name, fn, expect",
    [
        ("item", lambda t: t.sum().item(), "_local_scalar_dense"),
        ("to_cpu", lambda t: t.cpu(), "copy between cpu and npu"),
        ("from_cpu", lambda t: t.copy_(torch.ones(3)), "copy between cpu and npu"),
        ("synchronize", lambda t: torch.npu.synchronize(), "torch.npu.synchronize()"),
        ("stream_sync", lambda t: torch.npu.current_stream().synchronize(), "synchronizing the capturing stream"),
        ("empty_cache", lambda t: torch.npu.empty_cache(), "empty_cache"),
        ("nonzero", lambda t: t.nonzero(), "aten::nonzero"),
        ("unique", lambda t: t.unique(), "aten::_unique2"),
        ("masked_select", lambda t: t.masked_select(t > 0), "aten::masked_select"),
        ("equal", lambda t: torch.equal(t, t), "aten::equal"),
    ],
)
def test_unsafe_call_in_capture_names_op_and_invalidates(name, fn, expect):
    t = torch.ones(3, device="npu")
    g, ctx = begin()
    with pytest.raises(RuntimeError) as e:
        fn(t)
    assert expect in str(e.value)
    # Further work on the invalidated capture is refused too.
    with pytest.raises(RuntimeError, match="already invalidated"):
        t + 1
    end_expect_invalid(g, ctx, expect)


def test_graph_context_reraises_the_op_error_and_leaves_graph_reusable():
    t = torch.ones(3, device="npu")
    g = torch.npu.NPUGraph()
    with pytest.raises(RuntimeError, match="aten::nonzero"), torch.npu.graph(g):
        t.nonzero()
    with torch.npu.graph(g):
        t.add_(1)
    g.replay()
    assert torch.equal(t.cpu(), torch.full((3,), 2.0))


def test_unjoined_side_stream():
    x = torch.ones(4, device="npu")
    g, ctx = begin()
    side = torch.npu.Stream()
    side.wait_stream(torch.npu.current_stream())
    with torch.npu.stream(side):
        x.mul_(2)
    end_expect_invalid(g, ctx, f"stream(s) {side.stream_id}")
    assert torch.equal(x.cpu(), torch.ones(4))  # nothing ran


def _in_thread(fn):
    box = {}

    def run():
        try:
            fn()
            box["ok"] = True
        except RuntimeError as e:
            box["err"] = str(e)

    th = threading.Thread(target=run)
    th.start()
    th.join(60)
    return box


def test_global_mode_other_thread_unsafe_call_fails():
    _t = torch.ones(3, device="npu")
    g, ctx = begin("global")
    box = _in_thread(lambda: torch.npu.synchronize())
    assert "not allowed while an npu graph is being captured" in box["err"]
    end_expect_invalid(g, ctx, "torch.npu.synchronize()")


def test_global_mode_other_thread_allocation_outside_pool_fails():
    g, ctx = begin("global")
    # A fresh size class on the default stream needs new device memory.
    box = _in_thread(lambda: torch.empty(37 << 20, dtype=torch.uint8, device="npu"))
    assert "outside the graph's pool" in box["err"]
    end_expect_invalid(g, ctx, "outside the graph's pool")


def test_thread_local_mode_allows_other_threads_not_own():
    t = torch.ones(3, device="npu")
    g, ctx = begin("thread_local")
    box = _in_thread(lambda: (torch.npu.synchronize(), torch.ones(2, device="npu").sum().item()))
    assert box.get("ok"), box
    t.add_(1)
    g.capture_end()
    ctx.__exit__(None, None, None)
    g.replay()
    assert torch.equal(t.cpu(), torch.full((3,), 2.0))

    g2, ctx2 = begin("thread_local")
    with pytest.raises(RuntimeError, match="capture_error_mode='thread_local'"):
        torch.npu.synchronize()
    end_expect_invalid(g2, ctx2, "torch.npu.synchronize()")


def test_relaxed_mode_allows_unsafe_calls_but_not_conflicts():
    t = torch.ones(3, device="npu")
    g, ctx = begin("relaxed")
    torch.npu.synchronize()
    torch.npu.empty_cache()
    t.add_(1)
    g.capture_end()
    ctx.__exit__(None, None, None)
    g.replay()
    assert torch.equal(t.cpu(), torch.full((3,), 2.0))
    # Reading captured work is still impossible.
    g2, ctx2 = begin("relaxed")
    with pytest.raises(RuntimeError, match="_local_scalar_dense"):
        t.sum().item()
    end_expect_invalid(g2, ctx2, "_local_scalar_dense")


def test_bad_mode_and_api_misuse():
    g = torch.npu.NPUGraph()
    with pytest.raises(ValueError, match="capture_error_mode"):
        g.capture_begin(capture_error_mode="strict")
    with pytest.raises(RuntimeError, match="without capture_begin"):
        g.capture_end()
    with pytest.raises(RuntimeError, match="no completed capture"):
        g.replay()
    with torch.npu.graph(g):
        pass
    with pytest.raises(RuntimeError, match="already holds a capture"), torch.npu.graph(g):
        pass


def test_replay_inside_capture_is_refused():
    x = torch.zeros(2, device="npu")
    g = torch.npu.NPUGraph()
    with torch.npu.graph(g):
        x.add_(1)
    g2 = torch.npu.NPUGraph()
    with pytest.raises(RuntimeError, match="replaying an npu graph"), torch.npu.graph(g2):
        g.replay()


def test_non_capturable_optimizer_step_in_capture():
    p = torch.nn.Parameter(torch.ones(4, device="npu"))
    p.grad = torch.ones(4, device="npu")
    opt = torch.optim.AdamW([p], lr=0.1)  # capturable=False
    opt.step()
    g = torch.npu.NPUGraph()
    with pytest.raises(RuntimeError, match="capturable is False"), torch.npu.graph(g):
        opt.step()
    sgd = torch.optim.SGD([p], lr=0.1)  # SGD has no capturable mode
    with pytest.raises(RuntimeError, match="no capturable mode"), torch.npu.graph(torch.npu.NPUGraph()):
        sgd.step()


def test_op_on_quantized_npu_tensor_is_refused_during_capture():
    # Replay runs recorded kernels through the CPU key; a QuantizedCPU kernel would not be the one replayed.
    q = torch.quantize_per_tensor(torch.randn(4, device="npu"), 0.1, 10, torch.quint8)
    g, ctx = begin()
    with pytest.raises(RuntimeError, match="quantized npu tensor: ops on quantized tensors cannot be captured"):
        q.flip(0)
    end_expect_invalid(g, ctx, "quantized")
    assert q.flip(0).is_quantized  # outside capture it runs
