"""The flight recorder's trace, entry by entry, after a known sequence of collectives on 2 real
ranks: PyTorch's schema (keys and their order), names, sequence numbers, shapes and dtypes
(inline and spilled to the side store), states and times, Python frames, the group table, and
the ring dropping the oldest entries (TORCH_HCCL_TRACE_BUFFER_SIZE=20 for 24 collectives)."""
import json
import os

import pytest
import torch
import torch.distributed as dist

from npudist.testing.multiproc import run_on_ranks
from npudist.watchdog import flight_recorder_trace


def fr_entries_on_rank():
    """A rank of test_flight_recorder: a known sequence of hccl collectives, then this rank's
    flight-recorder trace with the run-dependent values (clock readings, thread ids) replaced by
    what can be checked about them.

    Prints ``RESULT {"entries": [...], "pg_config": {...}, "pg_status": {...}, "version": ...,
    "checks": [...]}``; ``checks`` lists every timing invariant that did not hold (empty when all did)."""
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    torch.npu.set_device(rank)
    dist.init_process_group("hccl")
    dev = "npu"
    x = torch.ones(1024, device=dev)
    for _ in range(5):  # the ring (TORCH_HCCL_TRACE_BUFFER_SIZE=20 in the test) has dropped these at the end
        dist.all_reduce(x)
    dist.all_reduce(x)
    dist.all_reduce(x)
    y = torch.ones(3, 5, device=dev)
    dist.all_reduce(y, async_op=True).wait()
    h = torch.zeros(2, 3, 4, dtype=torch.float16, device=dev)
    dist.broadcast(h, src=0)
    outs = [torch.empty(7, device=dev) for _ in range(world)]
    dist.all_gather(outs, torch.ones(7, device=dev))
    big = torch.empty(world * 6, device=dev)
    dist.all_gather_into_tensor(big, torch.ones(6, device=dev))
    rs = torch.empty(6, device=dev)
    dist.reduce_scatter_tensor(rs, torch.ones(world * 6, device=dev))
    p = torch.ones(9, dtype=torch.int64, device=dev)
    if rank == 0:
        dist.send(p, dst=1)
        dist.send(p, dst=1)
    elif rank == 1:
        dist.recv(p, src=0)
        dist.recv(p)  # from any source
    ops = [dist.P2POp(dist.isend, torch.ones(4, device=dev), (rank + 1) % world),
           dist.P2POp(dist.irecv, torch.empty(4, device=dev), (rank - 1) % world)]
    for w in dist.batch_isend_irecv(ops):
        w.wait()
    a, b = torch.ones(2, device=dev), torch.ones(3, 3, device=dev)
    with dist._coalescing_manager(async_ops=True) as cm:
        dist.all_reduce(a)
        dist.all_reduce(b)
    cm.wait()
    dist.barrier()
    many = torch.ones(1, 2, 1, 2, 1, 2, device=dev)  # 6 dimensions
    dist.all_reduce(many)
    scalar = torch.ones((), dtype=torch.float64, device=dev)
    dist.all_reduce(scalar)
    a2a = torch.empty(world * 2, device=dev)
    dist.all_to_all_single(a2a, torch.ones(world * 2, device=dev))
    rejected = None
    try:
        dist.all_reduce(torch.ones(2, device=dev), op=dist.ReduceOp.BAND)  # invalid for float
    except ValueError as e:
        rejected = str(e)[:40]
    # hccl serves cpu tensors only where named for cpu (it is registered for npu, as in torch_npu)
    sub = dist.new_group(list(range(world)), group_desc="fr_sub", backend="cpu:hccl,npu:hccl")
    dist.all_reduce(x, group=sub)
    c = torch.ones(3, dtype=torch.bfloat16)  # a cpu tensor
    dist.all_reduce(c, group=sub)
    torch.npu.synchronize()

    trace = flight_recorder_trace()
    checks, entries = [], []
    for e in trace["entries"]:
        e = dict(e)
        where = f"record {e['record_id']} ({e['profiling_name']})"
        created, started, completed = e["time_created_ns"], e["time_discovered_started_ns"], e["time_discovered_completed_ns"]
        if e["state"] == "completed":
            if not (created <= started <= completed):
                checks.append(f"{where}: times out of order {created} {started} {completed}")
            if abs(e["duration_ms"] - (completed - started) / 1e6) > 1e-9:
                checks.append(f"{where}: duration_ms {e['duration_ms']} != completed - started")
        e["time_created_ns"] = "t" if isinstance(created, int) and created > 0 else created
        e["time_discovered_started_ns"] = "t" if isinstance(started, int) and started > 0 else started
        e["time_discovered_completed_ns"] = "t" if isinstance(completed, int) and completed > 0 else completed
        if "duration_ms" in e:
            e["duration_ms"] = "d" if isinstance(e["duration_ms"], float) and e["duration_ms"] >= 0 else e["duration_ms"]
        e["thread_id"] = "tid" if e["thread_id"].isdigit() else e["thread_id"]
        e["frames"] = [(f["name"], os.path.basename(f["filename"])) for f in e["frames"]]
        e["key_order"] = list(e)
        entries.append(e)
    print("RESULT " + json.dumps({"entries": entries, "pg_config": trace["pg_config"], "pg_status": trace["pg_status"],
                                  "version": trace["version"], "keys": list(trace), "rejected": rejected,
                                  "checks": checks}), flush=True)
    dist.destroy_process_group()


REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

KEYS = ["record_id", "pg_id", "process_group", "thread_id", "thread_name", "collective_seq_id", "p2p_seq_id",
        "op_id", "profiling_name", "time_created_ns", "duration_ms", "input_sizes", "input_dtypes", "output_sizes",
        "output_dtypes", "state", "time_discovered_started_ns", "time_discovered_completed_ns", "retired",
        "timeout_ms", "is_p2p", "frames"]


def expected(rank):
    """(pg_id, collective_seq_id, p2p_seq_id, op_id, profiling_name, input_sizes, input_dtypes,
    output_sizes, output_dtypes) of each record the worker makes, in order."""
    peer = 1 - rank
    out, seq, p2p, op = [], 0, 0, 0

    def coll(name, ins, in_t, outs, out_t, pg=0):
        nonlocal seq, op
        seq, op = seq + 1, op + 1
        out.append((pg, seq, p2p, op, "hccl:" + name, ins, in_t, outs, out_t))

    def pt2pt(name, ins, in_t, outs, out_t):
        nonlocal p2p, op
        p2p, op = p2p + 1, op + 1
        out.append((0, seq, p2p, op, "hccl:" + name, ins, in_t, outs, out_t))

    for _ in range(7):
        coll("all_reduce", [[1024]], ["Float"], [[1024]], ["Float"])
    coll("all_reduce", [[3, 5]], ["Float"], [[3, 5]], ["Float"])
    coll("broadcast", [[2, 3, 4]], ["Half"], [[2, 3, 4]], ["Half"])
    coll("all_gather", [[7]], ["Float"], [[7], [7]], ["Float", "Float"])
    coll("_all_gather_base", [[6]], ["Float"], [[12]], ["Float"])
    coll("_reduce_scatter_base", [[12]], ["Float"], [[6]], ["Float"])
    if rank == 0:
        pt2pt("send 0->1", [[9]], ["Long"], [], [])
        pt2pt("send 0->1", [[9]], ["Long"], [], [])
    else:
        pt2pt("recv 1<-0", [], [], [[9]], ["Long"])
        pt2pt("recv", [], [], [[9]], ["Long"])  # from any source: no peer in the name
    pt2pt(f"send {rank}->{peer}", [[4]], ["Float"], [], [])
    pt2pt(f"recv {rank}<-{peer}", [], [], [[4]], ["Float"])
    op += 1  # the batch's coalesced wrapper: numbered, not recorded
    coll("allreduce_coalesced", [[2], [3, 3]], ["Float", "Float"], [[2], [3, 3]], ["Float", "Float"])
    coll("barrier", [], [], [], [])
    coll("all_reduce", [[1, 2, 1, 2, 1, 2]], ["Float"], [[1, 2, 1, 2, 1, 2]], ["Float"])
    coll("all_reduce", [[]], ["Double"], [[]], ["Double"])
    coll("all_to_all_single", [[4]], ["Float"], [[4]], ["Float"])
    coll("all_reduce", [], [], [], [])  # rejected (BAND on float): never started
    seq = op = p2p = 0
    coll("all_reduce", [[1024]], ["Float"], [[1024]], ["Float"], pg=1)
    coll("all_reduce", [[3]], ["BFloat16"], [[3]], ["BFloat16"], pg=1)
    return out


@pytest.mark.timeout(240)
def test_trace_entries_of_two_ranks():
    r = run_on_ranks(fr_entries_on_rank, 2, backend=None, env={"TORCH_HCCL_TRACE_BUFFER_SIZE": "20", "NPUDIST_HCCL_TRACE_FRAMES": "1"},
               hosts=["hostF"] * 2, timeout=200)
    assert r.ok(), r.explain()
    for rank in range(2):
        (res,) = r.results(rank)
        assert res["checks"] == [], res["checks"]
        assert res["version"] == "2.10" and res["keys"] == ["version", "comm_lib_version", "pg_config", "pg_status",
                                                             "entries"], res["keys"]
        assert res["rejected"] and "all_reduce" in res["rejected"], res["rejected"]
        assert res["pg_config"] == {"0": {"name": "0", "desc": "default_pg", "ranks": "[0, 1]"},
                                    "1": {"name": "1", "desc": "fr_sub", "ranks": "[0, 1]"}}, res["pg_config"]
        assert res["pg_status"]["0"] == {"last_enqueued_collective": 18, "last_started_collective": 17,
                                         "last_completed_collective": 18}, res["pg_status"]
        want = expected(rank)
        assert len(want) == 24
        entries = res["entries"]
        assert [e["record_id"] for e in entries] == list(range(4, 24))  # the ring kept the last 20
        for e, w in zip(entries, want[4:]):
            where = (rank, e["record_id"], e["profiling_name"])
            pg, seq, p2p, op, name, ins, in_t, outs, out_t = w
            assert e["key_order"] == KEYS or (
                "duration_ms" not in e and e["key_order"] == [k for k in KEYS if k != "duration_ms"]), where
            assert (e["pg_id"], e["collective_seq_id"], e["p2p_seq_id"], e["op_id"], e["profiling_name"]) == (
                pg, seq, p2p, op, name), (where, e)
            assert (e["input_sizes"], e["input_dtypes"], e["output_sizes"], e["output_dtypes"]) == (
                ins, in_t, outs, out_t), (where, e)
            assert e["process_group"] == (["0", "default_pg"] if pg == 0 else ["1", "fr_sub"]), where
            assert e["is_p2p"] == name.startswith(("hccl:send", "hccl:recv")), where
            assert e["timeout_ms"] == 1800000 and e["thread_id"] == "tid" and e["thread_name"] == "hccl", where
            if seq == 18 and pg == 0:  # the rejected one
                assert (e["state"], e["retired"], e["time_discovered_started_ns"], "duration_ms" in e) == (
                    "scheduled", False, None, False), (where, e)
            else:
                assert (e["state"], e["retired"], e["duration_ms"], e["time_created_ns"],
                        e["time_discovered_started_ns"], e["time_discovered_completed_ns"]) == (
                    "completed", True, "d", "t", "t", "t"), (where, e)
            # NPUDIST_HCCL_TRACE_FRAMES=1: the Python caller is in every entry's frames
            assert ["fr_entries_on_rank", "test_flight_recorder.py"] in e["frames"], (where, e["frames"])
