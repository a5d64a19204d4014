"""torch.save/torch.load, pinned memory, non_blocking copies, fork safety and spawn."""
import io
import multiprocessing as mp

import pytest
import torch


def test_save_load_roundtrips():
    model = torch.nn.Linear(4, 3).to("npu")
    x = torch.arange(6.0, device="npu:1")
    buf = io.BytesIO()
    torch.save({"model": model.state_dict(), "x": x, "view": x[2:]}, buf)
    buf.seek(0)
    loaded = torch.load(buf)
    assert loaded["x"].device == torch.device("npu:1")
    assert torch.equal(loaded["x"].cpu(), x.cpu()) and torch.equal(loaded["view"].cpu(), x[2:].cpu())
    buf.seek(0)
    on_cpu = torch.load(buf, map_location="cpu")
    assert on_cpu["x"].device.type == "cpu" and torch.equal(on_cpu["x"], x.cpu())
    buf.seek(0)
    on_npu0 = torch.load(buf, map_location="npu:0")
    assert on_npu0["x"].device == torch.device("npu:0")
    fresh = torch.nn.Linear(4, 3).to("npu")
    fresh.load_state_dict(on_npu0["model"])
    for a, b in zip(fresh.parameters(), model.parameters()):
        assert torch.equal(a.detach().cpu(), b.detach().cpu())
    cpu_buf = io.BytesIO()
    torch.save(torch.ones(3), cpu_buf)
    cpu_buf.seek(0)
    assert torch.load(cpu_buf, map_location="npu").device.type == "npu"


def test_pinned_memory_and_non_blocking_copies():
    p = torch.arange(8.0).pin_memory()
    assert p.is_pinned() and p[3:].is_pinned() and not torch.ones(2).is_pinned()
    n = p.to("npu", non_blocking=True)
    back = n.to("cpu", non_blocking=True)
    torch.npu.synchronize()
    assert torch.equal(back, p)
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.arange(10.0)), batch_size=5,
                                         pin_memory=True)
    batches = list(loader)
    assert all(b[0].is_pinned() for b in batches)


def test_fork_after_init_raises_clear_error(python):
    r = python("""
        import os, sys, torch
        torch.npu.get_device_name()   # a harmless query initialises npu
        inherited = torch.ones(4, device="npu")
        pid = os.fork()
        if pid == 0:
            for fn in (lambda: torch.zeros(1, device="npu"), torch.npu.get_device_name,
                       lambda: torch.npu.synchronize(), lambda: inherited.fill_(-1)):
                try:
                    fn(); print("child: no error")
                except RuntimeError as e:
                    print("child:", str(e).split(".")[0])
            print("bad fork", torch.npu._is_in_bad_fork(), flush=True)
            del inherited                 # freeing inherited npu memory in the child is harmless
            sys.exit(0)                   # a normal exit: module teardown frees npu tensors
        _, status = os.waitpid(pid, 0)
        print("child exit", os.waitstatus_to_exitcode(status))
        assert inherited.sum().item() == 4  # the child could not write into the parent's memory
        print("parent ok", torch.ones(2, device="npu").sum().item())
    """)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[:4] == ["child: Cannot re-initialize npu in forked subprocess"] * 4, r.stdout
    assert "bad fork True" in lines and "parent ok 2.0" in lines and "child exit 0" in lines


def test_fork_before_init_is_fine(python):
    r = python("""
        import os, torch
        pid = os.fork()
        if pid == 0:
            print("child", torch.ones(2, device="npu").sum().item()); os._exit(0)
        os.waitpid(pid, 0)
    """)
    assert r.returncode == 0, r.stderr
    assert "child 2.0" in r.stdout


def _child_sum(q):
    q.put(torch.ones(3, device="npu").sum().item())


class _Squares(torch.utils.data.Dataset):
    def __len__(self):
        return 4

    def __getitem__(self, i):
        return torch.tensor([float(i * i)])


@pytest.mark.parametrize("method", ["spawn", "forkserver"])
def test_spawn_and_forkserver_work(method):
    torch.ones(1, device="npu")  # initialised in the parent
    ctx = mp.get_context(method)
    q = ctx.Queue()
    p = ctx.Process(target=_child_sum, args=(q,))
    p.start()
    assert q.get(timeout=120) == 3.0
    p.join(60)
    assert p.exitcode == 0


def test_dataloader_workers_with_spawn():
    torch.ones(1, device="npu")
    loader = torch.utils.data.DataLoader(_Squares(), batch_size=2, num_workers=2, multiprocessing_context="spawn")
    got = torch.cat([b.flatten() for b in loader]).to("npu")
    assert got.cpu().tolist() == [0.0, 1.0, 4.0, 9.0]
