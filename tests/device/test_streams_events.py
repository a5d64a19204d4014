"""Streams, events and deferred work follow the execution model (docs/architecture.md)."""
import threading
import time

import pytest
import torch

from npudist import _C


def launch(stream, fn):
    _C._launch_host_func(stream.stream_id, stream.device_index, fn)


def test_kernel_waits_for_deferred_work_on_its_stream():
    s = torch.npu.Stream()
    x = torch.zeros(4, device="npu")
    with torch.npu.stream(s):
        launch(s, lambda: (time.sleep(0.2), x.fill_(5)))
        y = x + 1  # a kernel on s: completes s's pending work first
    assert y.cpu().tolist() == [6.0] * 4


def test_other_stream_does_not_wait_until_told():
    s = torch.npu.Stream()
    release = threading.Event()
    x = torch.zeros(1, device="npu")
    launch(s, lambda: (release.wait(10), x.fill_(1)))
    # The default stream was not made to wait for s: its kernels run now.
    assert (x + 0).item() == 0
    assert not s.query()
    ev = s.record_event()
    assert not ev.query()
    release.set()
    ev.synchronize()
    assert ev.query() and s.query()
    assert x.item() == 1


def test_wait_stream_and_wait_event_order_work():
    s = torch.npu.Stream()
    x = torch.zeros(1, device="npu")
    launch(s, lambda: (time.sleep(0.1), x.fill_(7)))
    torch.npu.current_stream().wait_stream(s)
    assert (x * 1).item() == 7
    e = torch.npu.Event()
    launch(s, lambda: (time.sleep(0.1), x.fill_(9)))
    e.record(s)
    e.wait()  # current stream waits for e
    assert (x * 1).item() == 9


def test_deferred_work_runs_in_issue_order_and_caller_helps():
    s = torch.npu.Stream()
    order = []
    main = threading.get_ident()
    runners = []
    for i in range(20):
        launch(s, lambda i=i: (order.append(i), runners.append(threading.get_ident())))
    s.synchronize()
    assert order == list(range(20))
    # Work that nobody started yet may run on the thread that waits for it.
    assert all(r in (main,) or r != main for r in runners)


def test_work_queued_behind_pending_work_of_another_stream():
    a, b = torch.npu.Stream(), torch.npu.Stream()
    seen = []
    gate = threading.Event()
    launch(a, lambda: (gate.wait(10), seen.append("a")))
    b.wait_stream(a)
    launch(b, lambda: seen.append("b"))
    time.sleep(0.05)
    assert seen == []  # b's work waits for a's
    gate.set()
    b.synchronize()
    assert seen == ["a", "b"]


def test_event_elapsed_time_and_timing_flag():
    s = torch.npu.Stream()
    start, end = torch.npu.Event(enable_timing=True), torch.npu.Event(enable_timing=True)
    start.record(s)
    launch(s, lambda: time.sleep(0.05))
    end.record(s)
    end.synchronize()
    assert 40 <= start.elapsed_time(end) < 5000
    untimed = torch.npu.Event()
    untimed.record(s)
    with pytest.raises((RuntimeError, ValueError), match="enable_timing"):
        start.elapsed_time(untimed)
    other = torch.npu.Event(enable_timing=True)
    other.record(torch.npu.Stream(device=1))
    with pytest.raises(ValueError, match="recorded on different npus"):
        start.elapsed_time(other)


def test_failed_deferred_work_surfaces_on_synchronize():
    s = torch.npu.Stream()

    def boom():
        raise ValueError("deferred boom")

    launch(s, boom)
    with pytest.raises(RuntimeError, match="deferred boom"):
        s.synchronize()


def test_stream_api_surface():
    assert torch.npu.current_stream() == torch.npu.default_stream()
    s = torch.npu.Stream(priority=-1)
    with torch.npu.stream(s):
        assert torch.npu.current_stream() == s
        assert torch.accelerator.current_stream() == s
    assert torch.npu.current_stream() == torch.npu.default_stream()
    torch.npu.set_stream(s)
    assert torch.npu.current_stream() == s
    torch.npu.set_stream(torch.npu.default_stream())
    other = torch.npu.Stream(device=1)
    with torch.npu.stream(other):
        assert torch.npu.current_device() == 1
    assert torch.npu.current_device() == 0
    g = torch.Stream(device="npu")  # torch.Stream goes through the same guard
    assert g.device.type == "npu"
    torch.npu.synchronize()
    torch.accelerator.synchronize()


def test_stream_priority_as_torch_cuda():
    """torch.cuda.Stream's priority API (breaker's finding: ``Stream(priority=-1).priority`` raised
    AttributeError): the priority is kept, clamped into priority_range(), also on a re-wrapped stream."""
    assert torch.npu.Stream.priority_range() == (0, -1)
    assert torch.npu.default_stream().priority == 0 and torch.npu.Stream().priority == 0
    hi = torch.npu.Stream(priority=-1)
    assert hi.priority == -1
    assert torch.npu.Stream(priority=-7).priority == -1 and torch.npu.Stream(priority=5).priority == 0
    with torch.npu.stream(hi):
        assert torch.npu.current_stream().priority == -1
    assert torch.npu.Stream(device=1, priority=-1).priority == -1


def test_npu_stream_handle_identifies_the_stream():
    s, t = torch.npu.Stream(), torch.npu.Stream()
    assert isinstance(s.npu_stream, int) and s.npu_stream != t.npu_stream
    assert torch.npu.current_stream().npu_stream == torch.npu.default_stream().npu_stream
    with torch.npu.stream(s):
        assert torch.npu.current_stream().npu_stream == s.npu_stream
