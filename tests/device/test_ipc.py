"""npu tensors between processes: torch.multiprocessing Queue/Pipe, DataLoader spawn workers, failure paths.

Every scenario runs in a fresh interpreter (npu initialised in the parent before any child starts,
as in real use) with a hard timeout; children are spawned and import tests.device._ipc_workers.
"""
import pytest

pytestmark = pytest.mark.timeout(180)


def test_queue_and_pipe_share_storage_and_keep_it_alive(python):
    r = python("""
        import multiprocessing as mp, torch, warnings
        from tests.device import _ipc_workers as w
        ctx = mp.get_context("spawn")
        q = ctx.Queue(); mine, theirs = ctx.Pipe()
        x = torch.arange(1000.0, device="npu:1")
        p = torch.nn.Parameter(torch.ones(2, device="npu"))
        h = torch.full((5,), 1.5, dtype=torch.bfloat16, device="npu")
        s = torch.ones(3, device="npu").untyped_storage()
        child = ctx.Process(target=w.consumer, args=(q, theirs, False)); child.start()
        q.put((x, x[10:13], p, h, s))
        print(mine.recv())
        assert mine.recv() == ("wrote",)
        print("parent sees write", x[0].item())
        allocated = torch.npu.memory_allocated(1)
        del x
        torch.npu.empty_cache()
        reuse = [torch.full((1000,), 9.0, device="npu:1") for _ in range(4)]  # would reuse x's block if freed
        print("held after del", torch.npu.memory_allocated(1) >= allocated + 4 * 4096)
        mine.send("producer freed and reused")
        print(mine.recv())
        back = mine.recv()
        print("back", back.device, back.tolist())
        assert mine.recv() == ("released",)
        print("collect", torch.npu.ipc_collect())
        mine.send("bye")
        child.join(60)
        print("child exit", child.exitcode)
        print("share_memory_", back.share_memory_() is back, back.is_shared())
    """)
    assert r.returncode == 0, r.stderr
    out = r.stdout.splitlines()
    assert out[0] == "('got', 'npu:1', [0.0, 1.0, 2.0], [10.0, 11.0, 12.0], True, 'Parameter', True, True, 12, 'npu:0')"
    assert "parent sees write -5.0" in out and "held after del True" in out, r.stdout
    assert "('still', True)" in out and "back npu:1 [3.0, 3.0, 3.0, 3.0]" in out, r.stdout
    assert "collect 0" in out and "child exit 0" in out and "share_memory_ True True" in out, r.stdout
    # The child exited while the parent still held `back`.
    assert "exiting while consumers still hold 1 npu storage(s)" in r.stderr, r.stderr


@pytest.mark.slow
def test_expandable_segments_storage_spanning_granules(python):
    r = python("""
        import multiprocessing as mp, torch
        from tests.device import _ipc_workers as w
        ctx = mp.get_context("spawn")
        q, back = ctx.Queue(), ctx.Queue()
        child = ctx.Process(target=w.echo_sum, args=(q, back)); child.start()
        from npudist import _C
        side, mine = torch.npu.Stream(), []
        for _ in range(4):  # grow this stream's segment and another stream's, turn about
            mine.append(torch.empty(2 << 20, dtype=torch.uint8, device="npu"))
            with torch.npu.stream(side):
                mine.append(torch.empty(2 << 20, dtype=torch.uint8, device="npu"))
        del mine[::2]  # frees this stream's granules: one 8 MiB range backed by 4 separate file ranges
        big = torch.empty(2 << 20, dtype=torch.int32, device="npu")
        big.copy_(torch.arange(2 << 20, dtype=torch.int32))
        e = _C._ipc_export(big); _C._ipc_release_reference(e[5], e[6], e[7])
        print("extents", len(e[2]))
        q.put(big[7:])
        print("sum ok", back.get(timeout=60) == int(big[7:].double().sum().item()))
        child.join(60); print("exit", child.exitcode)
    """, env={"PYTORCH_NPU_ALLOC_CONF": "expandable_segments:True"})
    assert r.returncode == 0, r.stderr
    assert "sum ok True" in r.stdout and "exit 0" in r.stdout, r.stdout + r.stderr
    assert int(r.stdout.split("extents ")[1].split()[0]) > 1, r.stdout  # the import stitched several ranges


@pytest.mark.parametrize("method", ["spawn", pytest.param("forkserver", marks=pytest.mark.slow)])
def test_dataloader_two_workers_return_npu_tensors(python, method):
    r = python(f"""
        import torch
        from tests.device import _ipc_workers as w
        torch.ones(1, device="npu")
        loader = torch.utils.data.DataLoader(w.NpuDataset(), batch_size=2, num_workers=2,
                                             multiprocessing_context="{method}")
        got, total = [], 0.0
        for b, i in loader:  # one epoch: each spawned worker costs an interpreter start
            got.append((b.device.type, b[:, 0].tolist(), i.tolist()))
            total += float(b.sum())
        print(got)
        print("sum", total)
    """)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == str([("npu", [float(2 * k), float(2 * k + 1)], [2 * k, 2 * k + 1]) for k in range(4)])
    assert lines[1] == "sum 84.0"


def test_bad_fork_errors_in_main_within_seconds(python):
    r = python("""
        import multiprocessing as mp, os, time, torch
        from tests.device import _ipc_workers as w
        torch.ones(1, device="npu")
        loader = torch.utils.data.DataLoader(w.NpuDataset(), batch_size=2, num_workers=2,
                                             multiprocessing_context="fork")
        t0 = time.monotonic()
        try:
            next(iter(loader)); print("no error")
        except RuntimeError as e:
            print("loader:", "Cannot re-initialize npu in forked subprocess" in str(e), time.monotonic() - t0 < 30)
        # A forked child holding an inherited npu tensor cannot share it: the receiver gets the reason.
        inherited = torch.arange(4.0, device="npu")
        q = mp.get_context("fork").Queue()
        pid = os.fork()
        if pid == 0:
            q.put(inherited); q.close(); q.join_thread(); os._exit(0)
        from npudist.device.ipc import NpuSharingError
        t0 = time.monotonic()
        try:
            q.get(timeout=30); print("no error")
        except NpuSharingError as e:
            print("queue:", "forked after npu was initialised" in str(e), time.monotonic() - t0 < 30)
        os.waitpid(pid, 0)
    """)
    assert r.returncode == 0, r.stderr
    assert "loader: True True" in r.stdout and "queue: True True" in r.stdout, r.stdout + r.stderr
    assert "NpuSharingWarning" in r.stderr, r.stderr  # the sender's side of the report


@pytest.mark.slow
def test_receiver_gets_error_when_sender_exited(python):
    r = python("""
        import multiprocessing as mp, time, torch
        from tests.device import _ipc_workers as w
        from npudist.device.ipc import NpuSharingError
        torch.ones(1, device="npu")
        ctx = mp.get_context("spawn")
        q = ctx.Queue()
        child = ctx.Process(target=w.put_and_exit, args=(q,)); child.start(); child.join(60)
        t0 = time.monotonic()
        try:
            q.get(timeout=30); print("no error")
        except NpuSharingError as e:
            print("error:", "exited" in str(e), time.monotonic() - t0 < 10)
        # cpu tensors still go through torch's own reducer
        q2 = ctx.Queue(); q2.put(torch.arange(3)); print("cpu", q2.get(timeout=30).tolist())
    """)
    assert r.returncode == 0, r.stderr
    assert "error: True True" in r.stdout and "cpu [0, 1, 2]" in r.stdout, r.stdout + r.stderr
