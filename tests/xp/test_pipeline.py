"""Data pipeline helpers: sharding, shuffling, batching, padding, packing, prefetch, tensors out."""
import numpy as np
import pytest
import torch

import npudist.xp as xp
from npudist.xp import pipeline as pl


@pytest.mark.parametrize("n,world", [(10, 3), (12, 4), (5, 8), (0, 2)])
@pytest.mark.parametrize("drop", [False, True])
def test_shards_cover_every_sample_once(n, world, drop):
    shards = [pl.shard_indices(n, r, world, drop_remainder=drop, seed=7).tolist() for r in range(world)]
    sizes = {len(s) for s in shards}
    assert len(sizes) == 1  # equal share per rank
    flat = sum(shards, [])
    if drop:
        assert len(set(flat)) == len(flat) == (n // world) * world
    else:
        assert set(flat) == set(range(n))
        assert len(flat) == (-(-n // world)) * world


def test_global_batches_are_the_same_on_any_number_of_ranks():
    n, g = 103, 8  # 12 global batches, 7 samples dropped
    perm = pl.shuffle_indices(n, seed=5, epoch=2).tolist()
    for world in (1, 2, 4, 8):
        parts = [pl.global_batch_shard(n, g, r, world, seed=5, epoch=2) for r in range(world)]
        assert all(len(p) == 12 for p in parts)
        for step in range(12):  # rank r's contiguous slice of the step's global batch
            assert sum((parts[r][step].tolist() for r in range(world)), []) == perm[step * g:(step + 1) * g]
    with pytest.raises(ValueError, match="global batch 6 must be a positive multiple of the 4 ranks"):
        pl.global_batch_shard(n, 6, 0, 4)


def test_shuffle_deterministic_per_seed_and_epoch():
    a = pl.shuffle_indices(100, seed=3, epoch=0).tolist()
    assert a == pl.shuffle_indices(100, seed=3, epoch=0).tolist()
    assert a != pl.shuffle_indices(100, seed=3, epoch=1).tolist()
    assert a != pl.shuffle_indices(100, seed=4, epoch=0).tolist()
    assert sorted(a) == list(range(100))


def test_rank_from_environment(monkeypatch):
    monkeypatch.setenv("RANK", "2")
    monkeypatch.setenv("WORLD_SIZE", "4")
    assert pl.rank_and_world_size() == (2, 4)
    with pytest.raises(ValueError, match="not in"):
        pl.rank_and_world_size(4, 4)


def test_batches():
    b = pl.batch_indices(xp.arange(10), 4)
    assert [x.tolist() for x in b] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    assert len(pl.batch_indices(xp.arange(10), 4, drop_last=True)) == 2
    with pytest.raises(ValueError):
        pl.batch_indices(xp.arange(3), 0)


SEQS = [[5, 6, 7], [1], [9, 8, 7, 6, 5], [], [3, 3]]


@pytest.mark.parametrize("side", ["right", "left"])
@pytest.mark.parametrize("max_len", [None, 4, 8])
def test_pad_sequences_against_reference(side, max_len):
    out = pl.pad_sequences([np.array(s, np.int32) for s in SEQS], pad_value=-1, max_len=max_len, side=side)
    L = max_len or 5
    ref = np.full((len(SEQS), L), -1, np.int32)
    mask = np.zeros((len(SEQS), L), bool)
    for i, s in enumerate(SEQS):
        s = s[:L]
        if side == "right":
            ref[i, :len(s)] = s
            mask[i, :len(s)] = True
        elif s:
            ref[i, -len(s):] = s
            mask[i, -len(s):] = True
    assert out["input_ids"].dtype == np.int32
    np.testing.assert_array_equal(out["input_ids"].get(), ref)
    np.testing.assert_array_equal(out["attention_mask"].get(), mask)
    np.testing.assert_array_equal(out["lengths"].get(), [min(len(s), L) for s in SEQS])
    with pytest.raises(ValueError, match="does not fit"):
        pl.pad_sequences(SEQS, max_len=2, truncate=False)


@pytest.mark.parametrize("eos", [None, 0])
@pytest.mark.parametrize("seq_len", [1, 3, 4, 16])
def test_pack_sequences_against_reference(eos, seq_len):
    out = pl.pack_sequences(SEQS, seq_len, pad_value=-1, eos_id=eos)
    stream, docs, pos = [], [], []
    for i, s in enumerate(SEQS):
        s = list(s) + ([eos] if eos is not None else [])
        stream += s
        docs += [i] * len(s)
        pos += list(range(len(s)))
    rows = -(-len(stream) // seq_len)
    pad = rows * seq_len - len(stream)
    np.testing.assert_array_equal(out["input_ids"].get().ravel(), stream + [-1] * pad)
    np.testing.assert_array_equal(out["document_ids"].get().ravel(), docs + [-1] * pad)
    np.testing.assert_array_equal(out["position_ids"].get().ravel(), pos + [0] * pad)
    np.testing.assert_array_equal(out["attention_mask"].get().ravel(), [True] * len(stream) + [False] * pad)
    assert out["input_ids"].shape == (rows, seq_len)


def test_token_dataset_gather_and_validation():
    ds = pl.TokenDataset.from_sequences(SEQS)
    assert len(ds) == 5 and ds.lengths().tolist() == [3, 1, 5, 0, 2]
    toks, lens = ds.gather(xp.asarray([2, 0]))
    assert toks.tolist() == [9, 8, 7, 6, 5, 5, 6, 7] and lens.tolist() == [5, 3]
    with pytest.raises(ValueError, match="offsets"):
        pl.TokenDataset(xp.arange(5), xp.asarray([0, 3, 2, 5]))
    with pytest.raises(TypeError, match="integers"):
        pl.TokenDataset(xp.ones(3), xp.asarray([0, 3]))


def test_prefetcher_order_errors_and_close():
    assert list(pl.Prefetcher(range(20), depth=3)) == list(range(20))

    def bad():
        yield 1
        raise RuntimeError("producer failed")
    it = pl.Prefetcher(bad())
    assert next(it) == 1
    with pytest.raises(RuntimeError, match="producer failed"):
        next(it)
    p = pl.Prefetcher(iter(range(10**6)), depth=1)
    next(p)
    p.close()
    assert not p._thread.is_alive()


@pytest.mark.parametrize("mode", ["pad", "pack"])
def test_pipeline_end_to_end_two_ranks(mode):
    rng = np.random.default_rng(0)
    seqs = [rng.integers(1, 1000, rng.integers(1, 40)) for _ in range(37)]
    ds = pl.TokenDataset.from_sequences(seqs)
    seen = []
    for rank in range(2):
        loader = pl.DataPipeline(ds, batch_size=4, seq_len=32, mode=mode, seed=11, rank=rank, world_size=2)
        loader.set_epoch(1)
        batches = list(loader)
        assert len(batches) == len(loader)
        for b in batches:
            ids = b["input_ids"]
            assert isinstance(ids, torch.Tensor) and ids.device.type == "npu" and ids.shape[-1] == 32
            if mode == "pad":
                seen += [tuple(r[m].tolist()) for r, m in zip(ids.cpu(), b["attention_mask"].cpu())]
            else:
                docs = b["document_ids"].cpu().reshape(-1)
                toks = ids.cpu().reshape(-1)
                for d in docs.unique().tolist():
                    if d >= 0:
                        seen.append(tuple(toks[docs == d].tolist()))
    expected = {tuple((s[:32] if mode == "pad" else s).tolist()) for s in seqs}
    assert set(seen) == expected  # every sequence arrives on exactly one of the ranks (plus the wrap-around pad)


def test_pipeline_arrays_and_zero_copy_handoff():
    data = xp.arange(40, dtype=np.float32).reshape(20, 2)
    loader = pl.DataPipeline(data, batch_size=8, shuffle=False, rank=0, world_size=1, prefetch=0)
    batches = list(loader)
    assert [b["data"].shape[0] for b in batches] == [8, 8, 4]
    assert torch.equal(batches[0]["data"].cpu(), torch.arange(16.0).reshape(8, 2))
    x = xp.ones(3)
    t = pl.to_torch_batch({"x": x})["x"]
    assert t.data_ptr() == x._t.data_ptr()
