"""The npu caching allocator: stats, split/coalesce, release, expandable segments,
record_stream, limits, OOM, snapshots and PYTORCH_NPU_ALLOC_CONF."""
import pickle
import threading

import pytest
import torch

from npudist import _C

MiB = 1 << 20


def empty(nbytes, device="npu"):
    return torch.empty(nbytes, dtype=torch.uint8, device=device)


def test_stats_match_what_was_allocated():
    torch.npu.empty_cache()
    torch.npu.reset_peak_memory_stats()
    before = torch.npu.memory_stats()
    sizes = [100, 512, 4000, 70000, 3 * MiB + 5, 12 * MiB]
    rounded = [max(512, (n + 511) // 512 * 512) for n in sizes]
    keep = [empty(n) for n in sizes]
    after = torch.npu.memory_stats()
    assert after["allocated_bytes.all.current"] - before["allocated_bytes.all.current"] == sum(rounded)
    assert after["requested_bytes.all.current"] - before["requested_bytes.all.current"] == sum(sizes)
    assert after["allocation.all.current"] - before["allocation.all.current"] == len(sizes)
    small = sum(r for r in rounded if r <= MiB)
    assert after["allocated_bytes.small_pool.current"] - before["allocated_bytes.small_pool.current"] == small
    assert torch.npu.max_memory_allocated() >= torch.npu.memory_allocated()
    assert torch.accelerator.memory_stats(0)["allocated_bytes.all.current"] == after["allocated_bytes.all.current"]
    del keep
    assert torch.npu.memory_stats()["allocated_bytes.all.current"] == before["allocated_bytes.all.current"]
    summary = torch.npu.memory_summary()
    assert "Allocated memory" in summary and "NPU reserved memory" in summary


def test_split_and_coalesce():
    torch.npu.empty_cache()
    r0 = torch.npu.memory_reserved()
    a = empty(3 * MiB)  # 1-10 MiB requests share a 20 MiB segment
    b = empty(3 * MiB)
    assert torch.npu.memory_reserved() - r0 == 20 * MiB
    assert b.data_ptr() == a.data_ptr() + 3 * MiB  # split from the same segment
    assert torch.npu.memory_stats()["inactive_split_bytes.all.current"] == 14 * MiB
    pa = a.data_ptr()
    del a, b  # coalesce back into one 20 MiB block
    assert torch.npu.memory_stats()["inactive_split.all.current"] == 0
    c = empty(9 * MiB)
    assert c.data_ptr() == pa and torch.npu.memory_reserved() - r0 == 20 * MiB
    del c


def test_empty_cache_returns_committed_memory():
    torch.npu.empty_cache()
    free0, _ = torch.npu.mem_get_info()
    x = empty(40 * MiB)
    assert torch.npu.mem_get_info()[0] == free0 - 40 * MiB
    del x
    assert torch.npu.mem_get_info()[0] == free0 - 40 * MiB  # cached
    torch.npu.empty_cache()
    assert torch.npu.mem_get_info()[0] == free0


def test_record_stream_prevents_early_reuse():
    s = torch.npu.Stream()
    gate = threading.Event()
    t = empty(4 * MiB)
    ptr = t.data_ptr()
    _C._launch_host_func(s.stream_id, s.device_index, lambda: gate.wait(30))  # deferred work pending on s
    t.record_stream(s)
    del t
    u = empty(4 * MiB)
    assert u.data_ptr() != ptr  # the block waits for s's work
    stats = torch.npu.memory_stats()
    assert stats["active_bytes.all.current"] >= stats["allocated_bytes.all.current"] + 4 * MiB
    gate.set()
    s.synchronize()
    v = empty(4 * MiB)
    assert v.data_ptr() == ptr  # reusable once that work completed
    with pytest.raises(RuntimeError, match="npu stream"):
        v.record_stream(torch.Stream(device="cpu"))


def test_snapshot_loads_in_memory_viz(tmp_path):
    from torch.cuda import _memory_viz

    torch.npu.memory._record_memory_history(enabled="all")
    try:
        x = empty(5 * MiB)
        y = empty(1000)
        del y
        path = tmp_path / "snap.pickle"
        torch.npu.memory._dump_snapshot(str(path))
    finally:
        torch.npu.memory._record_memory_history(enabled=None)
    snap = pickle.loads(path.read_bytes())
    blocks = [b for seg in snap["segments"] for b in seg["blocks"]]
    mine = [b for b in blocks if b["address"] == x.data_ptr()]
    assert mine and mine[0]["state"] == "active_allocated" and mine[0]["requested_size"] == 5 * MiB
    assert any(f["name"] == "test_snapshot_loads_in_memory_viz" for f in mine[0]["frames"])
    actions = {e["action"] for e in snap["device_traces"][0]}
    assert {"alloc", "free_requested", "free_completed"} <= actions
    assert "Summary of segments" in _memory_viz.segsum(snap)
    assert "alloc" in _memory_viz.trace(snap) or "Device 0" in _memory_viz.trace(snap)
    assert "<html" in _memory_viz.trace_plot(snap).lower()
    assert "<html" in _memory_viz.segment_plot(snap).lower()
    assert isinstance(torch.npu.memory_snapshot(), list)


@pytest.mark.parametrize("conf,expected", [
    ("expandable_segments:True,max_split_size_mb:64", "cannot be combined"),
    ("bogus_key:1", "unknown key 'bogus_key'"),
    ("max_split_size_mb:abc", "expects a number"),
    ("max_split_size_mb:10", "more than 20"),
    ("garbage_collection_threshold:1.5", "garbage_collection_threshold must be in (0, 1)"),
    ("roundup_power2_divisions:3", "power of 2"),
    ("per_process_memory_fraction:0", "per_process_memory_fraction must be in (0, 1]"),
    ("expandable_segments", "is not key:value"),
    ("expandable_segments:maybe", "expects True or False"),
])
def test_configuration_errors(conf, expected):
    with pytest.raises(ValueError, match=expected.replace("(", r"\(").replace(")", r"\)").replace("[", r"\[")
                       .replace("]", r"\]")):
        _C._parse_alloc_config(conf)


def test_configuration_error_reaches_the_user(python):
    r = python("""
        import torch
        try:
            torch.ones(1, device="npu")
        except ValueError as e:
            print("ValueError", e)
    """, env={"PYTORCH_NPU_ALLOC_CONF": "expandable_segments:True,max_split_size_mb:100"})
    assert r.returncode == 0, r.stderr
    assert "PYTORCH_NPU_ALLOC_CONF: expandable_segments:True cannot be combined with max_split_size_mb" in r.stdout


def test_expandable_segments_grow_and_shrink(python):
    r = python("""
        import torch
        MiB = 1 << 20
        a = torch.empty(5 * MiB, dtype=torch.uint8, device="npu")
        b = torch.empty(7 * MiB, dtype=torch.uint8, device="npu")
        assert b.data_ptr() == a.data_ptr() + 5 * MiB          # one contiguous range
        print(torch.npu.memory_reserved() // MiB)               # 12: granules mapped as it grew
        free_before = torch.npu.mem_get_info()[0]
        del b
        torch.npu.empty_cache()
        print(torch.npu.memory_reserved() // MiB, (torch.npu.mem_get_info()[0] - free_before) // MiB)
        c = torch.empty(30 * MiB, dtype=torch.uint8, device="npu")
        c.fill_(7)
        print(torch.npu.memory_reserved() // MiB, int(c[-1]), c.data_ptr() - a.data_ptr() == 5 * MiB)
        del a
        torch.npu.empty_cache()                                 # the hole left by `a` is unmapped
        print(torch.npu.memory_reserved() // MiB, int(c.sum()) == 7 * 30 * MiB)
    """, env={"PYTORCH_NPU_ALLOC_CONF": "expandable_segments:True"})
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["12", "6", "6", "36", "7", "True", "32", "True"]


def test_limits_gc_and_rounding(python):
    r = python("""
        import torch
        MiB = 1 << 20
        def empty(n): return torch.empty(n, dtype=torch.uint8, device="npu")
        # per_process_memory_fraction: 0.5 of 64 MiB
        try:
            x = empty(40 * MiB)
        except torch.OutOfMemoryError as e:
            print("limit", "at most 32.00 MiB" in str(e))
        torch.npu.set_per_process_memory_fraction(1.0)
        x = empty(40 * MiB); del x
        torch.npu.empty_cache()
        # garbage_collection_threshold 0.25 (16 MiB): a 20 MiB segment cached for another
        # stream is released before the default stream grows
        s = torch.npu.Stream()
        with torch.npu.stream(s):
            y = empty(3 * MiB)
        del y
        w = empty(12 * MiB)
        print("gc", torch.npu.memory_reserved() // MiB)
        del w
        # roundup_power2_divisions 4: 1.3 MiB -> 1.5 MiB
        z = empty(int(1.3 * MiB))
        print("round", torch.npu.memory_allocated() / MiB)
    """, env={"NPUDIST_DEVICE_MEMORY": "64MiB",
              "PYTORCH_NPU_ALLOC_CONF": "per_process_memory_fraction:0.5,garbage_collection_threshold:0.25,"
                                        "roundup_power2_divisions:4"})
    assert r.returncode == 0, r.stderr
    assert r.stdout.split("\n")[:3] == ["limit True", "gc 12", "round 1.5"]


def test_max_split_size_keeps_oversize_blocks_whole(python):
    r = python("""
        import torch
        MiB = 1 << 20
        big = torch.empty(40 * MiB, dtype=torch.uint8, device="npu")
        p = big.data_ptr(); del big
        small = torch.empty(2 * MiB, dtype=torch.uint8, device="npu")
        print(small.data_ptr() != p, torch.npu.memory_stats()["oversize_segments.current"])
    """, env={"PYTORCH_NPU_ALLOC_CONF": "max_split_size_mb:30"})
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["True", "1"]


def test_oom_message_advice_recovery_and_snapshot(python, tmp_path):
    r = python("""
        import torch
        MiB = 1 << 20
        keep = [torch.empty(3 * MiB, dtype=torch.uint8, device="npu") for _ in range(18)]  # 3 x 20 MiB segments
        del keep[::2]                      # holes: reserved >> allocated
        try:
            torch.empty(30 * MiB, dtype=torch.uint8, device="npu")
        except torch.OutOfMemoryError as e:
            print("OOM", e)
        del keep
        z = torch.ones(50 * MiB, dtype=torch.uint8, device="npu")
        print("recovered", int(z[-1]), torch.npu.memory_stats()["num_ooms"])
    """, env={"NPUDIST_DEVICE_MEMORY": "64MiB", "OOM_SNAPSHOT_ENABLE": "1", "OOM_SNAPSHOT_PATH": str(tmp_path)})
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert "NPU out of memory. Tried to allocate 30.00 MiB (npu 0; 64.00 MiB total capacity" in out
    assert "expandable_segments:True" in out
    assert "recovered 1 1" in out
    dumps = list(tmp_path.glob("oom_snapshot_*.pickle"))
    assert len(dumps) == 1 and "snapshot written to" in r.stderr
    snap = pickle.loads(dumps[0].read_bytes())
    assert any(e["action"] == "oom" for e in snap["device_traces"][0]) or snap["segments"]


def test_expandable_segments_with_several_streams(python):
    r = python("""
        import torch
        MiB = 1 << 20
        streams = [torch.npu.Stream() for _ in range(3)]
        keep = [torch.empty(3 * MiB, dtype=torch.uint8, device="npu")]
        for s in streams:                       # a device-sized range per stream
            with torch.npu.stream(s):
                keep.append(torch.empty(3 * MiB, dtype=torch.uint8, device="npu"))
        small = torch.empty(100, dtype=torch.uint8, device="npu")   # the small pool still has room
        print(len(keep), small.numel())
        del keep, small
        torch.npu.empty_cache()
        print(torch.npu.memory_reserved(), len(torch.npu.memory_snapshot()))
    """, env={"PYTORCH_NPU_ALLOC_CONF": "expandable_segments:True"})
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["4", "100", "0", "0"]


def test_inactive_split_stats_track_peaks():
    torch.npu.empty_cache()
    torch.npu.reset_peak_memory_stats()
    a = empty(3 * MiB)
    b = empty(3 * MiB)
    del a  # a free block beside a live one: inactive split
    s = torch.npu.memory_stats()
    assert s["inactive_split.large_pool.current"] == 2  # a's hole and the segment's tail
    assert s["inactive_split_bytes.large_pool.current"] == 17 * MiB
    assert s["inactive_split_bytes.large_pool.peak"] >= 17 * MiB
    del b
    s = torch.npu.memory_stats()
    assert s["inactive_split.all.current"] == 0 and s["inactive_split_bytes.all.peak"] >= 17 * MiB


def test_memory_api_argument_checks():
    with pytest.raises(TypeError):
        torch.npu.set_per_process_memory_fraction("0.5")
    with pytest.raises(ValueError, match="fraction must be in"):
        torch.npu.set_per_process_memory_fraction(1.5)
    with pytest.raises(ValueError, match="context must be"):
        torch.npu.memory._record_memory_history(context="bogus")
    with pytest.raises(ValueError, match="max_entries"):
        torch.npu.memory._record_memory_history(max_entries=-1)
    torch.npu.memory._record_memory_history(True)  # the legacy boolean form
    torch.npu.memory._record_memory_history(None)
    torch.npu.reset_max_memory_allocated()
