"""xp.get_default_memory_pool() / get_default_pinned_memory_pool(): CuPy's pool API, with figures
that are the npu allocators' own (torch.npu.memory_allocated / memory_reserved, host stats)."""
import gc

import pytest
import torch

import npudist.xp as xp


@pytest.fixture
def pool():
    gc.collect()   # arrays an earlier test left in reference cycles must not be freed mid-test
    p = xp.get_default_memory_pool()
    yield p
    p.set_limit(size=0)


def test_default_pools_are_shared_instances():
    assert xp.get_default_memory_pool() is xp.get_default_memory_pool()
    assert isinstance(xp.get_default_memory_pool(), xp.MemoryPool)
    assert isinstance(xp.get_default_pinned_memory_pool(), xp.PinnedMemoryPool)


def test_figures_match_the_allocator(pool):
    pool.free_all_blocks()
    base_used = pool.used_bytes()
    assert base_used == torch.npu.memory_allocated()
    a = xp.ones(1 << 20, dtype=xp.float32)          # 4 MiB, large pool
    assert pool.used_bytes() == torch.npu.memory_allocated() == base_used + 4 * (1 << 20)
    assert pool.total_bytes() == torch.npu.memory_reserved()
    assert pool.free_bytes() == pool.total_bytes() - pool.used_bytes()
    del a
    # freed memory stays cached in the pool: used drops, total does not
    assert pool.used_bytes() == base_used
    reserved = pool.total_bytes()
    assert reserved >= 4 * (1 << 20)
    assert pool.free_bytes() >= 4 * (1 << 20)
    assert pool.n_free_blocks() >= 1
    pool.free_all_blocks()
    assert pool.total_bytes() < reserved
    assert pool.total_bytes() == torch.npu.memory_reserved()


def test_malloc_returns_a_live_pointer(pool):
    before = pool.used_bytes()
    p = pool.malloc(3000)
    assert p.ptr != 0 and p.device_id == torch.npu.current_device()
    assert pool.used_bytes() == before + 3072   # allocator rounds to 512 B
    del p
    assert pool.used_bytes() == before
    with pytest.raises(ValueError, match="size must be >= 0"):
        pool.malloc(-1)


def test_set_limit_size_and_fraction(pool):
    assert pool.get_limit() == 0
    pool.set_limit(size=64 << 20)
    assert pool.get_limit() == 64 << 20
    with pytest.raises(torch.OutOfMemoryError):
        xp.empty(128 << 20, dtype=xp.uint8)
    small = xp.empty(8 << 20, dtype=xp.uint8)     # under the limit: fine
    del small
    total = torch.npu.mem_get_info()[1]
    pool.set_limit(fraction=0.5)
    assert abs(pool.get_limit() - total // 2) <= 1
    pool.set_limit()                               # neither: no limit
    assert pool.get_limit() == 0
    pool.set_limit(size=0)
    assert pool.get_limit() == 0
    with pytest.raises(ValueError, match="not both"):
        pool.set_limit(size=1, fraction=0.1)
    with pytest.raises(ValueError, match="fraction"):
        pool.set_limit(fraction=1.5)


def test_pool_follows_the_current_device(pool):
    with xp.Device(1):
        before = pool.used_bytes()
        assert before == torch.npu.memory_allocated(1)
        a = xp.zeros(1 << 18, dtype=xp.float64)   # 2 MiB on npu 1
        assert pool.used_bytes() == before + (2 << 20)
    assert pool.used_bytes() == torch.npu.memory_allocated(0)
    del a


def test_pinned_pool_counts_pinned_host_memory():
    pp = xp.get_default_pinned_memory_pool()
    base = pp.used_bytes()
    m = pp.malloc(10000)
    assert m.ptr != 0 and m.device_id == -1
    assert pp.used_bytes() == base + 10000
    t = torch.ones(1000, dtype=torch.float32).pin_memory()   # torch's own pinned tensors are counted
    assert t.is_pinned()
    assert pp.used_bytes() == base + 10000 + 4000
    assert pp.total_bytes() == pp.used_bytes()
    assert pp.n_free_blocks() == 0 and pp.free_bytes() == 0   # nothing is cached
    del m, t
    assert pp.used_bytes() == base
    pp.free_all_blocks()


def test_custom_allocators_are_refused():
    with pytest.raises(NotImplementedError, match="PYTORCH_NPU_ALLOC_CONF"):
        xp.MemoryPool(allocator=lambda n: None)
    with pytest.raises(NotImplementedError):
        xp.PinnedMemoryPool(allocator=lambda n: None)
