"""Process bodies for tests/device/test_ipc.py (spawned children import them from here)."""
import torch


def consumer(q_in, conn, expandable):
    """Receives npu tensors through a Queue, answers through a Pipe."""
    x, v, p, h, s = q_in.get(timeout=60)
    same_storage = v.untyped_storage().data_ptr() == x.untyped_storage().data_ptr()
    conn.send(("got", str(x.device), x[:3].tolist(), v.tolist(), same_storage, type(p).__name__, p.requires_grad,
               h.dtype == torch.bfloat16 and bool((h.float() == 1.5).all()), s.nbytes(), str(s.device)))
    x[0] = -5.0  # the producer sees this write
    conn.send(("wrote",))
    assert conn.recv() == "producer freed and reused"
    # The producer dropped x and reused memory; ours must be intact (the export holds it).
    conn.send(("still", bool((x[1:] == torch.arange(1, x.numel(), device=x.device, dtype=x.dtype)).all())))
    # An npu tensor back to the producer through the Pipe.
    back = torch.full((4,), 3.0, device="npu:1")
    conn.send(back)
    del x, v, p, h, s
    conn.send(("released",))
    assert conn.recv() == "bye"
    # Exits while the producer still holds `back`: the exit-time warning names that.


def put_and_exit(q):
    q.put(torch.arange(6.0, device="npu"))
    # The queue's feeder flushes at exit; this process (the sender) is gone when the parent reads.


class NpuDataset(torch.utils.data.Dataset):
    def __len__(self):
        return 8

    def __getitem__(self, i):
        return torch.full((3,), float(i), device="npu"), i


def echo_sum(q, back):
    t = q.get(timeout=60)
    back.put(int(t.double().sum().item()))
    del t
