"""The flight recorder's trace, entry by entry, after a known sequence of collectives on 2 real
ranks: PyTorch's schema (keys and their order), names, sequence numbers, shapes and dtypes
(inline and spilled to the side store), states and times, Python frames, the group table, and
the ring dropping the oldest entries (TORCH_HCCL_TRACE_BUFFER_SIZE=20 for 24 collectives)."""
import os

import pytest

from npudist.testing.multiproc import launch

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
WORKER = os.path.join(REPO, "tests", "watchdog", "workers", "fr_entries.py")

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
    r = launch(WORKER, 2, env={"TORCH_HCCL_TRACE_BUFFER_SIZE": "20", "NPUDIST_HCCL_TRACE_FRAMES": "1"},
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
            assert ["<module>", "fr_entries.py"] in e["frames"], (where, e["frames"])
