"""Per-rank data pipeline helpers on xp arrays: shard by rank, shuffle with a seed, batch, pad or
pack variable-length token sequences, prefetch the next batch, hand npu tensors to training.

Typical use in a training script (each rank runs this)::

    import npudist.xp as xp
    from npudist.xp import pipeline as pl

    ds = pl.TokenDataset.from_sequences(list_of_token_arrays)        # or TokenDataset(tokens, offsets)
    loader = pl.DataPipeline(ds, batch_size=8, seq_len=1024, mode="pack", seed=1234)
    for epoch in range(n_epochs):
        loader.set_epoch(epoch)
        for batch in loader:            # dict of torch tensors on this rank's npu (no copies)
            loss = model(batch["input_ids"], ...)

Rank and world size come from torch.distributed when it is initialised, else from the RANK and
WORLD_SIZE environment variables (set by npurun / torchrun), else 0 and 1.
"""
import queue
import threading

import numpy as np
import torch

from . import _config
from ._core import as_tensor, ndarray, tensor_of, wrap
from .random import default_rng


def rank_and_world_size(rank=None, world_size=None):
    """(rank, world_size): explicit values, else torch.distributed's, else RANK/WORLD_SIZE, else (0, 1).

    Raises ValueError if rank is not in [0, world_size)."""
    if rank is None or world_size is None:
        import torch.distributed as dist
        if dist.is_available() and dist.is_initialized():
            r, w = dist.get_rank(), dist.get_world_size()
        else:
            from npudist import _env

            r, w = _env.get_int("RANK", 0, lo=0), _env.get_int("WORLD_SIZE", 1, lo=1)
        rank = r if rank is None else rank
        world_size = w if world_size is None else world_size
    if world_size < 1 or not 0 <= rank < world_size:
        raise ValueError(f"rank {rank} is not in [0, world_size={world_size})")
    return int(rank), int(world_size)


def shard_indices(n, rank=None, world_size=None, *, drop_remainder=False, seed=None, epoch=0):
    """Indices of the n samples this rank owns: shuffled with (seed, epoch) when seed is given
    (every rank computes the same permutation), then strided rank::world_size.

    drop_remainder=False pads by wrapping around so every rank gets ceil(n / world_size) indices
    (as torch's DistributedSampler); True drops the tail so every rank gets n // world_size.
    Returns an int64 xp array."""
    rank, world_size = rank_and_world_size(rank, world_size)
    if n < 0:
        raise ValueError(f"n must be non-negative, got {n}")
    idx = shuffle_indices(n, seed, epoch)._t if seed is not None else torch.arange(n, device=_config.device())
    if drop_remainder:
        per = n // world_size
        idx = idx[:per * world_size]
    else:
        per = -(-n // world_size) if n else 0
        total = per * world_size
        if total > n and n:
            idx = idx.repeat(-(-total // n))[:total]
    return wrap(idx[rank::world_size][:per].contiguous())


def global_batch_shard(n, global_batch, rank=None, world_size=None, *, seed=0, epoch=0):
    """This rank's part of every global batch of an epoch, the same global batches on any number
    of ranks: the epoch's permutation (``shuffle_indices(n, seed, epoch)``) is cut into consecutive
    global batches of ``global_batch`` samples (the tail dropped), and rank r of W takes the r-th
    of W equal contiguous slices of each. An elastic job that shrinks keeps its data order: the
    survivors take the lost ranks' slices (in more micro-batches each).

    Returns a list (one entry per step) of int64 xp arrays of ``global_batch // world_size``
    indices. Raises ValueError if ``global_batch`` is not a positive multiple of ``world_size``."""
    rank, world_size = rank_and_world_size(rank, world_size)
    if global_batch < 1 or global_batch % world_size:
        raise ValueError(f"global batch {global_batch} must be a positive multiple of the {world_size} ranks")
    per = global_batch // world_size
    t = shuffle_indices(n, seed, epoch)._t
    return [wrap(t[g + rank * per:g + (rank + 1) * per]) for g in range(0, n - n % global_batch, global_batch)]


def shuffle_indices(n, seed, epoch=0):
    """A permutation of range(n), the same for the same (seed, epoch) on every rank (xp int64)."""
    return default_rng([int(seed), int(epoch)]).permutation(int(n))


def batch_indices(indices, batch_size, drop_last=False):
    """Splits an index array into consecutive batches of batch_size (the last may be smaller unless
    drop_last). Returns a list of xp arrays (views)."""
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    t = tensor_of(indices)
    n = t.shape[0]
    stop = n - n % batch_size if drop_last else n
    return [wrap(t[i:i + batch_size]) for i in range(0, stop, batch_size)]


class TokenDataset:
    """Variable-length token sequences stored flat: ``tokens`` (1-D ints) and ``offsets``
    (len n+1, sequence i is tokens[offsets[i]:offsets[i+1]]), both xp arrays on the npu."""

    def __init__(self, tokens, offsets):
        self.tokens = tokens if isinstance(tokens, ndarray) else wrap(as_tensor(tokens))
        self.offsets = offsets if isinstance(offsets, ndarray) else wrap(as_tensor(offsets))
        t, o = self.tokens._t, self.offsets._t
        if t.ndim != 1 or o.ndim != 1 or o.numel() < 1:
            raise ValueError("tokens must be 1-D and offsets 1-D with at least one entry")
        if t.is_floating_point() or t.is_complex() or t.dtype == torch.bool:
            raise TypeError(f"tokens must be integers, got {self.tokens.dtype}")
        if int(o[0]) != 0 or int(o[-1]) != t.numel() or bool((o[1:] < o[:-1]).any()):
            raise ValueError("offsets must start at 0, end at len(tokens) and never decrease")

    @classmethod
    def from_sequences(cls, sequences, dtype=None):
        """From a list of 1-D token arrays (NumPy, xp, lists); dtype defaults to their common dtype
        (int64 for Python lists)."""
        arrs = [np.asarray(s.get() if isinstance(s, ndarray) else s).reshape(-1) for s in sequences]
        if dtype is None:
            dtype = np.result_type(*[a.dtype for a in arrs if a.size]) if any(a.size for a in arrs) else np.int64
        arrs = [a.astype(dtype, copy=False) for a in arrs]
        offsets = np.zeros(len(arrs) + 1, np.int64)
        if arrs:
            offsets[1:] = np.cumsum([a.size for a in arrs])
        tokens = np.concatenate(arrs) if arrs else np.zeros(0, dtype)
        return cls(tokens, offsets)

    def __len__(self):
        return self.offsets.shape[0] - 1

    def lengths(self):
        o = self.offsets._t
        return wrap(o[1:] - o[:-1])

    def gather(self, indices):
        """Sequences at indices as (flat tokens, lengths) xp arrays, in index order."""
        idx = tensor_of(indices)
        o = self.offsets._t
        starts, ends = o[idx], o[idx + 1]
        lengths = ends - starts
        total = int(lengths.sum())
        seq_start = torch.cumsum(lengths, 0) - lengths
        owner = torch.repeat_interleave(torch.arange(idx.numel(), device=o.device), lengths, output_size=total)
        pos = torch.arange(total, device=o.device) - seq_start[owner]
        return wrap(self.tokens._t[starts[owner] + pos]), wrap(lengths)


def _flat(sequences):
    if isinstance(sequences, tuple) and len(sequences) == 2 and isinstance(sequences[0], ndarray):
        return sequences[0]._t, sequences[1]._t
    ds = TokenDataset.from_sequences(sequences)
    return ds.tokens._t, ds.lengths()._t


def pad_sequences(sequences, pad_value=0, max_len=None, side="right", truncate=True):
    """Pads variable-length sequences into one [batch, L] array.

    sequences: a list of 1-D token arrays, or (flat tokens, lengths) as from TokenDataset.gather.
    L = max_len or the longest length; longer sequences are truncated (truncate=True) or raise
    ValueError. side 'right' or 'left'. Returns dict: input_ids [B, L] (tokens' dtype),
    attention_mask [B, L] bool, lengths [B] int64 - all xp arrays."""
    tokens, lengths = _flat(sequences)
    if side not in ("left", "right"):
        raise ValueError(f"side must be 'left' or 'right', got {side!r}")
    b = lengths.numel()
    longest = int(lengths.max()) if b else 0
    L = longest if max_len is None else int(max_len)
    if longest > L and not truncate:
        raise ValueError(f"a sequence of length {longest} does not fit max_len={L} (pass truncate=True)")
    dev = tokens.device
    starts = torch.cumsum(lengths, 0) - lengths
    owner = torch.repeat_interleave(torch.arange(b, device=dev), lengths, output_size=tokens.numel())
    pos = torch.arange(tokens.numel(), device=dev) - starts[owner]
    kept = lengths.clamp(max=L)
    keep = pos < L
    col = pos if side == "right" else pos + (L - kept)[owner]
    out = torch.full((b, L), pad_value, dtype=tokens.dtype, device=dev)
    out[owner[keep], col[keep]] = tokens[keep]
    cols = torch.arange(L, device=dev).unsqueeze(0)
    mask = cols < kept.unsqueeze(1) if side == "right" else cols >= (L - kept).unsqueeze(1)
    return {"input_ids": wrap(out), "attention_mask": wrap(mask), "lengths": wrap(kept)}


def pack_sequences(sequences, seq_len, pad_value=0, eos_id=None):
    """Packs sequences back to back into rows of seq_len tokens (the last row padded).

    With eos_id, an end-of-sequence token is appended to each sequence first. Returns dict:
    input_ids [N, seq_len], document_ids [N, seq_len] (int64 index of the sequence in the input,
    -1 on padding; use it to stop attention across documents), position_ids [N, seq_len]
    (position inside its document), attention_mask [N, seq_len] bool - all xp arrays."""
    if seq_len < 1:
        raise ValueError(f"seq_len must be >= 1, got {seq_len}")
    tokens, lengths = _flat(sequences)
    dev = tokens.device
    b = lengths.numel()
    if eos_id is not None:
        starts = torch.cumsum(lengths, 0) - lengths
        new_len = lengths + 1
        total = int(new_len.sum())
        owner = torch.repeat_interleave(torch.arange(b, device=dev), new_len, output_size=total)
        new_starts = torch.cumsum(new_len, 0) - new_len
        pos = torch.arange(total, device=dev) - new_starts[owner]
        is_eos = pos == lengths[owner]
        src = (starts[owner] + pos).clamp(max=max(tokens.numel() - 1, 0))
        tokens = torch.where(is_eos, torch.tensor(eos_id, dtype=tokens.dtype, device=dev),
                             tokens[src] if tokens.numel() else torch.zeros_like(src).to(tokens.dtype))
        lengths = new_len
    total = tokens.numel()
    owner = torch.repeat_interleave(torch.arange(b, device=dev), lengths, output_size=total)
    starts = torch.cumsum(lengths, 0) - lengths
    pos = torch.arange(total, device=dev) - starts[owner]
    rows = -(-total // seq_len) if total else 0
    padded = rows * seq_len
    fill = padded - total

    def padded_to(t, value):
        return torch.cat([t, torch.full((fill,), value, dtype=t.dtype, device=dev)]).reshape(rows, seq_len)
    return {"input_ids": wrap(padded_to(tokens, pad_value)), "document_ids": wrap(padded_to(owner, -1)),
            "position_ids": wrap(padded_to(pos, 0)),
            "attention_mask": wrap(padded_to(torch.ones(total, dtype=torch.bool, device=dev), False))}


def to_torch_batch(batch):
    """dict/list/tuple of xp arrays -> the same structure of npu torch tensors sharing memory."""
    if isinstance(batch, ndarray):
        return batch._t
    if isinstance(batch, dict):
        return {k: to_torch_batch(v) for k, v in batch.items()}
    if isinstance(batch, (list, tuple)):
        return type(batch)(to_torch_batch(v) for v in batch)
    return batch


_END = object()


class Prefetcher:
    """Iterates ``iterable`` in a background thread, keeping up to ``depth`` items ready, so the
    next batch is prepared while the training step runs. Exceptions in the producer are re-raised
    in the consumer; close() (or leaving a ``with`` block) stops the thread."""

    def __init__(self, iterable, depth=2):
        if depth < 1:
            raise ValueError(f"depth must be >= 1, got {depth}")
        self._q = queue.Queue(maxsize=depth)
        self._stop = threading.Event()
        self._device = torch.npu.current_device()
        self._thread = threading.Thread(target=self._run, args=(iter(iterable),), daemon=True,
                                        name="xp-prefetch")
        self._thread.start()

    def _run(self, it):
        torch.npu.set_device(self._device)
        try:
            for item in it:
                if not self._put(item):
                    return
            self._put(_END)
        except BaseException as e:  # noqa: BLE001  (handed to the consumer)
            self._put(e)

    def _put(self, item):
        """Queues item unless close() was called (then returns False)."""
        while not self._stop.is_set():
            try:
                self._q.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def __iter__(self):
        return self

    def __next__(self):
        item = self._q.get()
        if item is _END:
            self._q.put(_END)
            raise StopIteration
        if isinstance(item, BaseException):
            raise item
        return item

    def close(self):
        self._stop.set()
        self._thread.join(timeout=5)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class DataPipeline:
    """Shard -> shuffle -> batch -> pad/pack -> prefetch -> torch tensors, for one rank.

    dataset: a TokenDataset (variable-length sequences) or an array-like of samples (first axis).
    mode (TokenDataset only): 'pad' (one row per sequence, padded to seq_len or the batch's
    longest) or 'pack' (the batch's sequences packed into rows of seq_len). Each iteration
    yields a dict of npu torch tensors (for arrays: {'data': tensor, 'indices': tensor}).
    set_epoch(e) reshuffles deterministically (same permutation on every rank)."""

    def __init__(self, dataset, batch_size, *, seq_len=None, mode="pad", shuffle=True, seed=0, drop_last=False,
                 rank=None, world_size=None, prefetch=2, pad_value=0, eos_id=None):
        if mode not in ("pad", "pack"):
            raise ValueError(f"mode must be 'pad' or 'pack', got {mode!r}")
        if mode == "pack" and not seq_len:
            raise ValueError("mode='pack' needs seq_len")
        self.dataset = dataset if isinstance(dataset, (TokenDataset, ndarray)) \
            else wrap(as_tensor(dataset))
        self.batch_size, self.seq_len, self.mode = batch_size, seq_len, mode
        self.shuffle, self.seed, self.drop_last = shuffle, seed, drop_last
        self.rank, self.world_size = rank_and_world_size(rank, world_size)
        self.prefetch, self.pad_value, self.eos_id = prefetch, pad_value, eos_id
        self.epoch = 0

    def set_epoch(self, epoch):
        self.epoch = int(epoch)

    def __len__(self):
        n = len(self.dataset) if isinstance(self.dataset, TokenDataset) else self.dataset.shape[0]
        per = n // self.world_size if self.drop_last else -(-n // self.world_size)
        return per // self.batch_size if self.drop_last else -(-per // self.batch_size)

    def _batches(self):
        n = len(self.dataset) if isinstance(self.dataset, TokenDataset) else self.dataset.shape[0]
        idx = shard_indices(n, self.rank, self.world_size, drop_remainder=self.drop_last,
                            seed=self.seed if self.shuffle else None, epoch=self.epoch)
        for b in batch_indices(idx, self.batch_size, self.drop_last):
            yield to_torch_batch(self.make_batch(b))

    def make_batch(self, indices):
        """The batch (dict of xp arrays) for these sample indices."""
        if isinstance(self.dataset, TokenDataset):
            flat = self.dataset.gather(indices)
            if self.mode == "pack":
                return pack_sequences(flat, self.seq_len, self.pad_value, self.eos_id)
            return pad_sequences(flat, self.pad_value, self.seq_len)
        return {"data": wrap(self.dataset._t.index_select(0, indices._t)), "indices": indices}

    def __iter__(self):
        if self.prefetch:
            return iter(Prefetcher(self._batches(), self.prefetch))
        return self._batches()
