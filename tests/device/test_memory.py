"""Device memory: accounting (fallback outputs included), capacity, OutOfMemoryError, release."""
import torch

from npudist import _C

MiB = 1 << 20


def test_accounting_covers_native_and_fallback_outputs():
    torch.npu.empty_cache()
    base = torch.npu.memory_allocated()
    a = torch.empty(256, 1024, device="npu")  # native empty: 1 MiB
    assert torch.npu.memory_allocated() - base == MiB
    b = a.exp()  # fallback op: its CPU kernel allocates in npu memory
    assert torch.npu.memory_allocated() - base == 2 * MiB
    assert _C._device_of_ptr(b.data_ptr()) == 0  # inside npu 0's address range
    c = torch.mm(torch.ones(512, 512, device="npu"), torch.ones(512, 512, device="npu"))
    assert _C._device_of_ptr(c.data_ptr()) == 0
    assert torch.accelerator.memory_allocated(0) == torch.npu.memory_allocated(0)
    assert torch.npu.max_memory_allocated() >= torch.npu.memory_allocated()
    stats = torch.accelerator.memory_stats(0)
    assert stats["allocated_bytes.all.current"] == torch.npu.memory_allocated()
    del a, b, c
    assert torch.npu.memory_allocated() == base
    assert torch.npu.memory_reserved() >= base


def test_cpu_tensors_stay_in_host_memory():
    x = torch.ones(1000)
    y = x * 2
    assert _C._device_of_ptr(y.data_ptr()) == -1 and y.device.type == "cpu"


def test_empty_cache_returns_memory_to_the_driver():
    torch.npu.empty_cache()
    free0, total = torch.npu.mem_get_info()
    x = torch.empty(64 * MiB // 4, device="npu")
    free1, _ = torch.npu.mem_get_info()
    assert free0 - free1 == 64 * MiB
    del x
    assert torch.npu.mem_get_info()[0] == free1  # cached, still reserved
    torch.npu.empty_cache()
    assert torch.npu.mem_get_info()[0] == free0
    assert total == torch.npu.get_device_properties().total_memory


def test_capacity_enforced_and_process_recovers(python):
    r = python("""
        import torch
        x = torch.empty(40 << 20, dtype=torch.uint8, device="npu")
        try:
            y = torch.empty(40 << 20, dtype=torch.uint8, device="npu")
        except torch.OutOfMemoryError as e:
            print("OOM", e)
        try:
            x.float()   # fallback output beyond capacity: also an OutOfMemoryError
        except torch.OutOfMemoryError as e:
            print("OOM2", "Tried to allocate" in str(e))
        del x
        z = torch.ones(40 << 20, dtype=torch.uint8, device="npu")
        print("after", int(z[-1].item()), z.numel(), torch.npu.memory_stats_as_nested_dict()["num_ooms"])
    """, env={"NPUDIST_DEVICE_MEMORY": "64MiB"})
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].startswith("OOM NPU out of memory. Tried to allocate 40.00 MiB (npu 0; 64.00 MiB total capacity")
    assert "NPUDIST_DEVICE_MEMORY" in lines[0]
    assert lines[1] == "OOM2 True"
    assert lines[2] == f"after 1 {40 << 20} 2"


def test_cached_blocks_are_reused():
    torch.npu.empty_cache()
    x = torch.empty(3 * MiB, dtype=torch.uint8, device="npu")
    ptr = x.data_ptr()
    reserved = torch.npu.memory_reserved()
    del x
    y = torch.empty(3 * MiB, dtype=torch.uint8, device="npu")
    assert y.data_ptr() == ptr and torch.npu.memory_reserved() == reserved


def test_caching_allocator_alloc_and_delete():
    """torch.npu.caching_allocator_alloc/delete as torch.cuda's: a counted block of the caching
    allocator on the chosen device and stream, reused after delete; bad input named."""
    base = torch.npu.memory_allocated(1)
    s = torch.npu.Stream(device=1)
    ptr = torch.npu.caching_allocator_alloc(3 * MiB, device="npu:1", stream=s)
    assert _C._device_of_ptr(ptr) == 1 and torch.npu.memory_allocated(1) - base == 3 * MiB
    seg = [sg for sg in torch.npu.memory_snapshot() if sg["device"] == 1
           and sg["address"] <= ptr < sg["address"] + sg["total_size"]]
    assert seg and seg[0]["stream"] == s.stream_id  # the block belongs to the stream asked for
    torch.npu.caching_allocator_delete(ptr)
    assert torch.npu.memory_allocated(1) == base
    torch.npu.caching_allocator_delete(0)  # as torch.cuda: a null pointer is a no-op
    assert torch.npu.caching_allocator_alloc(0) == 0
    for bad, err in ((lambda: torch.npu.caching_allocator_delete(ptr), RuntimeError),
                     (lambda: torch.npu.caching_allocator_alloc(-1), ValueError),
                     (lambda: torch.npu.caching_allocator_alloc(8, stream=7), TypeError)):
        try:
            bad()
        except err as e:
            assert "caching_allocator" in str(e)
        else:
            raise AssertionError("bad input accepted")


def test_get_per_process_memory_fraction(python):
    r = python("""
        import torch
        assert torch.npu.get_per_process_memory_fraction() == 0.25  # from PYTORCH_NPU_ALLOC_CONF
        torch.npu.set_per_process_memory_fraction(0.5, 1)
        assert torch.npu.get_per_process_memory_fraction(1) == 0.5
        assert torch.npu.get_per_process_memory_fraction("npu:0") == 0.25
        print("OK")
    """, env={"PYTORCH_NPU_ALLOC_CONF": "per_process_memory_fraction:0.25"})
    assert r.returncode == 0 and r.stdout.strip() == "OK", r.stderr[-3000:]
