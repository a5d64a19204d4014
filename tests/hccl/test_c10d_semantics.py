"""c10d semantics that PyTorch's distributed suite checks, on 2 and 3 ranks:
all_gather_coalesced in c10d's layout, recv from any source (tags, irecv, npu, sizes
above a chunk), and the behaviours the suite runs only for BACKEND == "gloo"
(all_reduce_coalesced ops, also on a group of some ranks, object collectives, get_future
chains, batch_isend_irecv with tags, a group's timeout, DDP gradient accumulation under
no_sync with and without comm hooks and gradient_as_bucket_view, on cpu and npu). Values are compared bitwise where the result is pure data
movement or a fixed-order reduction (tests/hccl/workers/c10d_semantics.py)."""
import os
import time
import warnings
from datetime import timedelta

import pytest
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

from npudist.testing import rank
from npudist.testing.checks import report

from . import launch, run_ranks


@pytest.mark.timeout(600)
@pytest.mark.parametrize("nranks", [2, 3])
def test_c10d_semantics(nranks):
    r = launch("c10d_semantics.py", nranks, timeout=540)
    assert r.returncodes == [0] * nranks, r.explain()
    for i in range(nranks):
        res = r.results(i)[-1]
        assert res["checks"] > 400, res
        assert res["nfail"] == 0, "\n".join(res["failures"])


@pytest.mark.timeout(300)
def test_recv_anysource_across_hosts():
    """Every rank on its own simulated host: recv without src is Gloo's recvAnysource."""
    r = launch("c10d_semantics.py", 3, ["remote"], hosts=["hA", "hB", "hC"], timeout=240)
    assert r.returncodes == [0] * 3, r.explain()
    for i in range(3):
        res = r.results(i)[-1]
        assert res["nfail"] == 0, res
    assert r.results(0)[-1]["checks"] >= 4 * 3, r.results(0)[-1]  # rank 0 receives and checks


def ddp_timer_on_rank():
    """DDP on npu with hccl, a few steps: its logging data's timings (the reducer's npu timer,
    csrc/hccl/ddp_timer.cpp)."""
    torch.manual_seed(0)
    model = DDP(torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.ReLU(), torch.nn.Linear(256, 8)).npu(),
                device_ids=[torch.npu.current_device()], bucket_cap_mb=0.01)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(4):
        x = torch.randn(32, 64, generator=torch.Generator().manual_seed(step * 10 + rank.rank())).npu()
        loss = model(x).square().mean()
        loss.backward()
        opt.step()
        opt.zero_grad()
    data = model._get_ddp_logging_data()
    keys = ("forward_compute_time", "backward_compute_time", "backward_comm_time",
            "backward_compute_comm_overlap_time", "avg_forward_compute_time", "avg_backward_compute_time",
            "avg_backward_comm_time")
    return {"times": {k: data.get(k) for k in keys}, "device": str(data.get("device_ids")),
            "backend": data.get("backend_name")}


def set_timeout_on_rank(done_file):
    """Lowering a live hccl group's timeout, 2 ranks: torch 2.13's private _set_pg_timeout does
    not reach a plugin backend (it warns, in torch's words); the public ProcessGroup.set_timeout
    does. Rank 1 then never joins an all_reduce: rank 0's fails after the new 3 s, not the 120 s
    the group was created with; rank 1 stays alive until rank 0 has reported (``done_file``)."""
    rank.init("hccl", timeout_s=120)
    x = torch.ones(64, device="npu")
    dist.all_reduce(x)
    torch.npu.synchronize()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        dist.distributed_c10d._set_pg_timeout(timedelta(seconds=3))
    private_warnings = [str(w.message) for w in caught]
    dist.group.WORLD.set_timeout(timedelta(seconds=3))  # the public way: reaches ProcessGroupHCCL
    dist.barrier()
    torch.npu.synchronize()
    if rank.rank() == 0:
        t0, error = time.monotonic(), None
        try:
            dist.all_reduce(x)
            torch.npu.synchronize()
        except Exception as e:
            error = f"{type(e).__name__}: {e}"
        report(kind="timeout", seconds=time.monotonic() - t0, error=error, private_warnings=private_warnings)
        open(done_file, "w").close()
    else:
        report(kind="timeout", private_warnings=private_warnings)
        deadline = time.monotonic() + 60  # never joins; stays alive past rank 0's timeout
        while not os.path.exists(done_file) and time.monotonic() < deadline:
            time.sleep(0.1)
    os._exit(0)  # the group is unusable after a timeout: no destroy_process_group


@pytest.mark.timeout(200)
def test_ddp_records_npu_timings():
    # The reducer's timer for npu (c10d TimerRegistry, PrivateUse1; csrc/hccl/ddp_timer.cpp), as torch_npu
    # registers one: DDP's logging data has its timings and DDP does not warn that it cannot time npu.
    r = run_ranks(ddp_timer_on_rank, 2, timeout=150).check()
    for res in r.values():
        times = res["times"]
        assert all(isinstance(v, int) and v > 0 for v in times.values()), times
        # a forward of this size takes well under a second of npu (host) time, in ns
        assert times["forward_compute_time"] < 10 ** 10, times
        assert times["backward_compute_time"] >= times["backward_compute_comm_overlap_time"] >= 0, times
    for err in r.stderr:
        assert "Time stats are currently only collected" not in err, err[-3000:]


@pytest.mark.timeout(200)
def test_public_set_timeout_reaches_hccl(tmp_path):
    r = run_ranks(set_timeout_on_rank, 2, str(tmp_path / "rank0_done"), backend=None, timeout=150)
    assert r.returncodes == [0] * 2, r.explain()
    res = r.results(0)[0]
    # torch 2.13's _set_pg_timeout passes timeouts to NCCL and Gloo only (docs/collectives.md, "Timeouts")
    assert any("only supported for either nccl or gloo" in w for w in res["private_warnings"]), res
    assert res["error"] is not None and "collective timeout" in res["error"], res
    assert "group.set_timeout(...)" in res["error"], res  # the timeout error names the public way to change it
    assert res["seconds"] < 60, res  # the lowered 3 s, not the 120 s the group began with
