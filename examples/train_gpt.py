"""The flagship job: a small byte-level GPT trained with FSDP2 on npu, launched by npurun.

    npurun --nproc 4 examples/train_gpt.py                 # what `./run.sh demo` runs
    npurun --nproc 4 examples/train_gpt.py --steps 1000 --ckpt-dir /tmp/gpt --mp fp32

Data: the Python standard library's own ``*.py`` files (every machine has them), read as bytes
(vocabulary 256). Files are split into train and validation by file (every ``--val-every``-th
file in sorted order is held out). Tokenising, splitting, packing into rows of ``seq_len + 1``
bytes, sharding by rank, shuffling and batching run on npudist.xp (npudist/xp/pipeline.py), on
the rank's npu.

Model: a GPT (pre-LayerNorm blocks, causal ``scaled_dot_product_attention``, GELU MLP),
created on the meta device, sharded with ``fully_shard`` per block and at the root, then
materialised with ``to_empty(device=npu)`` and initialised in place. Mixed precision as NPU users
run it by default: ``MixedPrecisionPolicy(param_dtype=bfloat16, reduce_dtype=float32)`` (npu's bf16
GEMMs accumulate in fp32 at about fp32 speed, docs/device_api.md; validation loss at step 300
within 0.01 nats/byte of fp32); ``--mp fp32`` trains in fp32 (the default with ``--replicate``,
``--graphs`` and ``--device cpu``); explicit
forward/backward prefetch of the next block; ``--compile``: ``torch.compile`` per block (Inductor's
C++ kernels on npu memory, docs/graph.md); AdamW, warm-up + cosine schedule, gradient
clipping over the DTensor gradients.

Every ``--log-every`` steps rank 0 prints step, training loss (mean over ranks and the window),
validation loss (nats per byte, on ``--eval-batches`` held-out batches per rank), tokens/s of the
whole job and npu memory of rank 0. The unigram baseline (cross-entropy of the validation bytes
under the training set's byte frequencies) is printed at the start; the loss should fall well
below it within a few hundred steps.

Checkpoints: DCP (``torch.distributed.checkpoint``) of the sharded model and optimizer state and
the step, to ``--ckpt-dir/step_NNNNNNN`` every ``--ckpt-every`` steps (``--async-ckpt``: with
``dcp.async_save`` on a dedicated group) and when a rank receives SIGTERM (npurun forwards
SIGTERM/SIGINT to every rank): the ranks agree on the step to stop at, save, and exit with code
143. On start the job resumes from the newest complete checkpoint in ``--ckpt-dir``, unless
``--no-resume``. On another number of ranks DCP reshards it, when that is asked for: under an
elastic range (``npurun --nnodes MIN:MAX``, e.g. after a lost host) or with ``--reshard``; else
it is an error naming both sizes (npudist.fsdp.elastic). ``--global-batch G`` keeps G sequences a
step on any number of ranks (each rank runs G / (ranks x --batch-size) micro-batches) and logs
the global batch's mean loss. At the end it prints a short generated sample.

Each step reports its time and this rank's token count to ``npudist.watchdog.metrics.record_step``
(Prometheus metrics: ``npurun --metrics-port 9400 ...``, docs/metrics.md).

The model and the step are importable (benchmarks/train_step.py times them): ``GPTConfig``,
``GPT``, ``build_fsdp_model``.
"""
import argparse
import dataclasses
import datetime
import json
import math
import os
import shutil
import signal
import sys
import time

import numpy as np
import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp
import torch.nn as nn
import torch.nn.functional as F
from torch.distributed.checkpoint.state_dict import get_state_dict, set_state_dict
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

from npudist.profiler import step as profiler_step
from npudist.watchdog.metrics import record_step

EXIT_SIGTERM = 143  # 128 + SIGTERM: the job was stopped, its checkpoint is saved


# ---------------------------------------------------------------------------------------------
# model

@dataclasses.dataclass
class GPTConfig:
    """Sizes of the GPT. vocab_size 256 = bytes; seq_len is the context length in tokens."""
    vocab_size: int = 256
    seq_len: int = 128
    d_model: int = 256
    n_layer: int = 4
    n_head: int = 4
    mlp_ratio: int = 4
    dropout: float = 0.0  # on the embeddings and each residual branch (training only); not in the checkpoint's config


def model_config_json(cfg: GPTConfig) -> str:
    """The model configuration a checkpoint must match (dropout excluded: it changes no parameter)."""
    return json.dumps({k: v for k, v in dataclasses.asdict(cfg).items() if k != "dropout"}, sort_keys=True)


class Block(nn.Module):
    """Pre-LayerNorm transformer block: x + attn(ln(x)), then x + mlp(ln(x)). x: [B, T, d]."""

    def __init__(self, cfg: GPTConfig):
        super().__init__()
        self.n_head = cfg.n_head
        self.ln1 = nn.LayerNorm(cfg.d_model)
        self.qkv = nn.Linear(cfg.d_model, 3 * cfg.d_model)
        self.proj = nn.Linear(cfg.d_model, cfg.d_model)
        self.ln2 = nn.LayerNorm(cfg.d_model)
        self.fc = nn.Linear(cfg.d_model, cfg.mlp_ratio * cfg.d_model)
        self.out = nn.Linear(cfg.mlp_ratio * cfg.d_model, cfg.d_model)
        self.drop = nn.Dropout(cfg.dropout)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=2)
        q, k, v = (z.view(b, t, self.n_head, d // self.n_head).transpose(1, 2) for z in (q, k, v))
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.drop(self.proj(a.transpose(1, 2).reshape(b, t, d)))
        return x + self.drop(self.out(F.gelu(self.fc(self.ln2(x)))))


class GPT(nn.Module):
    """Byte-level GPT. forward(idx [B, T] int64, targets [B, T] int64 or None) ->
    (logits [B, T, vocab] in the compute dtype, mean cross-entropy in float32 or None)."""

    def __init__(self, cfg: GPTConfig):
        super().__init__()
        self.cfg = cfg
        self.tok_emb = nn.Embedding(cfg.vocab_size, cfg.d_model)
        self.pos_emb = nn.Embedding(cfg.seq_len, cfg.d_model)
        self.drop = nn.Dropout(cfg.dropout)
        self.blocks = nn.ModuleList(Block(cfg) for _ in range(cfg.n_layer))
        self.ln_f = nn.LayerNorm(cfg.d_model)
        self.head = nn.Linear(cfg.d_model, cfg.vocab_size, bias=False)

    def init_weights(self):
        """(Re)initialises every parameter in place (works on sharded DTensor parameters after
        ``to_empty``): normal(0, 0.02) weights, zero biases, residual projections scaled by
        1/sqrt(2 n_layer), LayerNorms at (1, 0)."""
        std = 0.02
        with torch.no_grad():
            for name, p in self.named_parameters():
                if name.endswith("bias"):
                    p.zero_()
                elif ".ln" in name or name.startswith("ln_"):
                    p.fill_(1.0)
                elif name.endswith(("proj.weight", "out.weight")):
                    p.normal_(0.0, std / math.sqrt(2 * self.cfg.n_layer))
                else:
                    p.normal_(0.0, std)

    def forward(self, idx, targets=None):
        t = idx.shape[1]
        if t > self.cfg.seq_len:
            raise ValueError(f"sequence of {t} tokens is longer than the model's seq_len={self.cfg.seq_len}")
        pos = torch.arange(t, device=idx.device)
        x = self.drop(self.tok_emb(idx) + self.pos_emb(pos))
        for block in self.blocks:
            x = block(x)
        logits = self.head(self.ln_f(x))
        if targets is None:
            return logits, None
        loss = F.cross_entropy(logits.float().reshape(-1, logits.shape[-1]), targets.reshape(-1))
        return logits, loss


def num_params(cfg: GPTConfig) -> int:
    """Parameter count of GPT(cfg), without building it."""
    with torch.device("meta"):
        return sum(p.numel() for p in GPT(cfg).parameters())


def mp_policy(mp: str) -> MixedPrecisionPolicy:
    """FSDP2's policy for --mp: 'bf16' = bf16 parameters in forward/backward (all-gathered as bf16),
    gradients reduced in fp32, as NPU users run it; 'fp32' = no mixed precision.
    Raises ValueError for any other name."""
    if mp not in ("bf16", "fp32"):
        raise ValueError(f"mp must be 'bf16' or 'fp32', got {mp!r}")
    if mp == "bf16":
        return MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
    return MixedPrecisionPolicy()


def build_fsdp_model(cfg: GPTConfig, device, mp="bf16", reshard_after_forward=True, mesh=None, seed=0,
                     compile=False):
    """GPT(cfg) on the meta device, fully_shard per block and at the root, to_empty(device),
    init_weights with torch.manual_seed(seed) (the same on every rank), explicit prefetch of the
    next block forward and the previous block backward. mp: 'bf16' (param bfloat16, reduce
    float32) or 'fp32'. compile: torch.compile each block's forward (per-block compile: FSDP2's
    all-gather/reduce-scatter hooks stay outside the compiled graphs; parameter names and
    checkpoints are the same as without it). Returns the model (an FSDPModule)."""
    policy = mp_policy(mp)
    with torch.device("meta"):
        model = GPT(cfg)
    kw = dict(mp_policy=policy, mesh=mesh)
    for block in model.blocks:
        fully_shard(block, reshard_after_forward=reshard_after_forward, **kw)
    fully_shard(model, reshard_after_forward=reshard_after_forward, **kw)
    blocks = list(model.blocks)
    for i, block in enumerate(blocks):
        if i + 1 < len(blocks):
            block.set_modules_to_forward_prefetch([blocks[i + 1]])
        if i > 0:
            block.set_modules_to_backward_prefetch([blocks[i - 1]])
    if compile:
        for block in blocks:
            block.forward = torch.compile(block.forward)
    model.to_empty(device=device)
    torch.manual_seed(seed)
    model.init_weights()
    return model


def build_replicated_model(cfg: GPTConfig, device, seed=0):
    """GPT(cfg) replicated on every rank (no FSDP2), initialised as build_fsdp_model does
    (init_weights with torch.manual_seed(seed)). Used by --replicate and --graphs."""
    model = GPT(cfg).to(device)
    torch.manual_seed(seed)
    model.init_weights()
    return model


class ReplicatedStep:
    """One training step of a replicated model: forward, backward, one all_reduce (AVG) of
    the flattened gradients, gradient clipping, AdamW with capturable=True and a tensor lr.

    With graphs=True (``--graphs``) the step is captured once in an npu graph (after `warmup`
    eager steps on the capture stream) and replayed from then on: the batch is copied into
    static [B, T] int64 inputs, the loss is the graph's static output. The batch shape must
    not change. __call__(batch [B, T+1], lr float) -> loss (0-dim float32 tensor)."""

    def __init__(self, model, opt, lr_tensor, clip, batch_size, seq_len, device, graphs=False, warmup=3):
        self.model, self.opt, self.lr, self.clip = model, opt, lr_tensor, clip
        self.params = [p for p in model.parameters() if p.requires_grad]
        self.idx = torch.zeros(batch_size, seq_len, dtype=torch.long, device=device)
        self.tgt = torch.zeros(batch_size, seq_len, dtype=torch.long, device=device)
        self.graphs, self.warmup, self.done = graphs, warmup, 0
        self.graph, self.loss = None, None
        self.stream = torch.npu.Stream() if graphs else None

    def _step(self):
        _, loss = self.model(self.idx, self.tgt)
        loss.backward()
        grads = [p.grad for p in self.params]
        flat = torch.cat([g.reshape(-1) for g in grads])
        dist.all_reduce(flat, op=dist.ReduceOp.AVG)
        offset = 0
        for g in grads:
            g.copy_(flat[offset:offset + g.numel()].view_as(g))
            offset += g.numel()
        if self.clip > 0:
            torch.nn.utils.clip_grad_norm_(self.params, self.clip)
        self.opt.step()
        return loss

    def __call__(self, batch, lr):
        self.lr.fill_(lr)
        self.idx.copy_(batch[:, :-1])
        self.tgt.copy_(batch[:, 1:])
        if not self.graphs:
            for p in self.params:
                p.grad = None
            return self._step()
        if self.graph is None:
            cur = torch.npu.current_stream()
            for p in self.params:
                p.grad = None  # the captured backward writes fresh gradients each replay
            self.stream.wait_stream(cur)
            if self.done < self.warmup:  # lazy state (optimizer moments, steps) before capture
                with torch.npu.stream(self.stream):
                    loss = self._step()
                cur.wait_stream(self.stream)
                self.done += 1
                return loss
            self.graph = torch.npu.NPUGraph()
            with torch.npu.graph(self.graph, stream=self.stream):
                self.loss = self._step()
            # capture recorded the step without running it: the first replay runs it
        self.graph.replay()
        return self.loss


# ---------------------------------------------------------------------------------------------
# data (npudist.xp)

def stdlib_files(data_dir=None):
    """Sorted paths of the *.py files directly in data_dir (default: the standard library)."""
    data_dir = data_dir or os.path.dirname(os.__file__)
    files = sorted(os.path.join(data_dir, n) for n in os.listdir(data_dir) if n.endswith(".py"))
    if not files:
        raise FileNotFoundError(f"no *.py files in {data_dir!r}; pass --data-dir with Python sources")
    return files


class ByteData:
    """The corpus as xp arrays on this rank's npu.

    train_rows / val_rows: uint8 xp arrays [N, seq_len + 1] (files packed back to back, each
    followed by a 0 byte, a separator that does not occur in source text); unigram_nats: the
    validation bytes' cross-entropy under the training bytes' frequencies (add-one smoothed)."""

    def __init__(self, seq_len, data_dir=None, val_every=10, max_bytes=None):
        import npudist.xp as xp
        from npudist.xp import pipeline as pl
        if val_every < 2:
            raise ValueError(f"--val-every must be >= 2 (every N-th file is held out), got {val_every}")
        train, val = [], []
        total = 0
        for i, path in enumerate(stdlib_files(data_dir)):
            with open(path, "rb") as f:
                data = f.read()
            (val if i % val_every == val_every - 1 else train).append(xp.frombuffer(data, dtype=xp.uint8))
            total += len(data)
            if max_bytes and total >= max_bytes:
                break
        if not train or not val:
            raise ValueError(f"need at least {val_every} files for a train/validation split, found {len(train) + len(val)}")
        self.n_files = (len(train), len(val))
        ds_train = pl.TokenDataset.from_sequences(train, dtype=np.uint8)
        ds_val = pl.TokenDataset.from_sequences(val, dtype=np.uint8)
        self.n_bytes = (int(ds_train.tokens.shape[0]), int(ds_val.tokens.shape[0]))
        counts = xp.bincount(ds_train.tokens, minlength=256).astype(xp.float64) + 1.0
        logp = xp.log(counts / counts.sum())
        vcounts = xp.bincount(ds_val.tokens, minlength=256).astype(xp.float64)
        self.unigram_nats = float(-(vcounts * logp).sum() / vcounts.sum())
        self.train_rows = self._rows(pl, ds_train, seq_len)
        self.val_rows = self._rows(pl, ds_val, seq_len)

    @staticmethod
    def _rows(pl, ds, seq_len):
        packed = pl.pack_sequences((ds.tokens, ds.lengths()), seq_len + 1, pad_value=0, eos_id=0)
        return packed["input_ids"]


def train_batches(rows, batch_size, seed, start_step):
    """Endless batches of this rank's training rows (uint8 npu tensors [batch, seq_len + 1]):
    epoch e is a permutation seeded by (seed, e), sharded by rank, in batches of batch_size;
    start_step skips the batches already trained on (resume)."""
    from npudist.xp import pipeline as pl
    loader = pl.DataPipeline(rows, batch_size, shuffle=True, seed=seed, drop_last=True, prefetch=0)
    per_epoch = len(loader)
    if per_epoch == 0:
        raise ValueError(f"batch size {batch_size} x {loader.world_size} ranks is larger than the "
                         f"{rows.shape[0]} training rows; lower --batch-size or --seq-len")
    epoch, skip = divmod(start_step, per_epoch)
    while True:
        loader.set_epoch(epoch)
        idx = pl.shard_indices(rows.shape[0], loader.rank, loader.world_size, drop_remainder=True, seed=seed,
                               epoch=epoch)
        for b in pl.batch_indices(idx, batch_size, drop_last=True)[skip:]:
            yield pl.to_torch_batch(loader.make_batch(b))["data"]
        skip, epoch = 0, epoch + 1


def global_train_batches(rows, global_batch, batch_size, seed, start_step):
    """--global-batch: for each step from start_step, this rank's micro-batches of batch_size
    sequences. The global batch of a step (npudist.xp's ``global_batch_shard``) depends on
    (seed, global batch, step) only, not on the number of ranks: a job that shrinks trains on the
    same data, each survivor taking more micro-batches."""
    from npudist.xp import pipeline as pl
    loader = pl.DataPipeline(rows, batch_size, shuffle=True, seed=seed, drop_last=True, prefetch=0)
    per_rank = global_batch // loader.world_size
    if global_batch % loader.world_size or per_rank % batch_size:
        raise ValueError(f"--global-batch {global_batch} must be a multiple of --batch-size {batch_size} x "
                         f"{loader.world_size} ranks")
    per_epoch = rows.shape[0] // global_batch
    if per_epoch == 0:
        raise ValueError(f"--global-batch {global_batch} is larger than the {rows.shape[0]} training rows")
    epoch, skip = divmod(start_step, per_epoch)
    while True:
        for mine in pl.global_batch_shard(rows.shape[0], global_batch, seed=seed, epoch=epoch)[skip:]:
            yield [pl.to_torch_batch(loader.make_batch(b))["data"] for b in pl.batch_indices(mine, batch_size)]
        skip, epoch = 0, epoch + 1


def val_batches(rows, batch_size, n_batches):
    """The first n_batches batches of this rank's share of the validation rows (fixed, no shuffle)."""
    from npudist.xp import pipeline as pl
    loader = pl.DataPipeline(rows, batch_size, shuffle=False, drop_last=False, prefetch=0)
    idx = pl.shard_indices(rows.shape[0], loader.rank, loader.world_size)
    return [pl.to_torch_batch(loader.make_batch(b))["data"] for b in pl.batch_indices(idx, batch_size)[:n_batches]]


# ---------------------------------------------------------------------------------------------
# checkpoints

def complete_checkpoints(ckpt_dir, report=None):
    """(step, path) of every complete, undamaged checkpoint under ckpt_dir, oldest first.

    A ``step_NNNNNNN`` directory that is torn or damaged (no or unreadable ``.metadata``, a shard
    file missing or shorter than its metadata says: ``npudist.fsdp.checkpoint_problem``) is
    skipped; ``report(path, reason)`` is called for each one skipped."""
    from npudist.fsdp import checkpoint_problem
    out = []
    if os.path.isdir(ckpt_dir):
        for name in os.listdir(ckpt_dir):
            path = os.path.join(ckpt_dir, name)
            if not (name.startswith("step_") and name[5:].isdigit()):
                continue
            problem = checkpoint_problem(path)
            if problem is None:
                out.append((int(name[5:]), path))
            elif report is not None:
                report(path, problem)
    return sorted(out)


def rng_state(device):
    """This rank's generator states: torch's cpu generator and, on npu, the rank's npu generator
    (dropout draws from it). uint8 cpu tensors, as torch.get_rng_state returns them."""
    state = {"cpu": torch.get_rng_state()}
    if device.type == "npu":
        state["npu"] = torch.npu.get_rng_state(device)
    return state


def set_rng_state(state, device):
    torch.set_rng_state(state["cpu"])
    if "npu" in state:
        torch.npu.set_rng_state(state["npu"], device)


class Checkpointer:
    """DCP checkpoints of (model, optimizer, trainer state, every rank's RNG state) under
    ckpt_dir/step_NNNNNNN.

    The per-rank RNG states are ordinary entries of the one DCP checkpoint, under a key per rank
    (``rng.rank_R.cpu``, ``rng.rank_R.npu``): each rank's state dict holds its own key only, and
    DCP's planner merges them, so they are written and committed with the same ``.metadata`` as
    the model (a separate per-rank file could survive a torn save, or go missing from a whole one)."""

    def __init__(self, ckpt_dir, model, opt, config_json, keep=2, async_group=None, device=None, trainer=None):
        self.dir, self.model, self.opt, self.config_json, self.keep = ckpt_dir, model, opt, config_json, keep
        self.async_group = async_group
        self.device = device or torch.device("cpu")
        self.trainer = dict(trainer or {})  # run facts that decide the data order: checked on resume
        self.pending = None  # (future, step, path) of a running async save
        self.reshard = False  # True: a change of world size is requested (--reshard)

    def _state(self, step, rng=True):
        msd, osd = get_state_dict(self.model, self.opt)
        state = {"model": msd, "optim": osd, "trainer": {"step": step, "config": self.config_json, **self.trainer}}
        if rng:
            state["rng"] = {f"rank_{dist.get_rank()}": rng_state(self.device)}
        return state

    def save(self, step, use_async=False):
        """Saves the state after `step` steps; returns the checkpoint path."""
        from npudist.fsdp import checkpoint_problem, checkpoint_writer
        self.wait()
        path = os.path.join(self.dir, f"step_{step:07d}")
        if dist.get_rank() == 0:
            os.makedirs(self.dir, exist_ok=True)
            if os.path.isdir(path) and checkpoint_problem(path) is not None:
                shutil.rmtree(path)  # a torn save of the same step (before the restart): start clean
        writer = checkpoint_writer(path)
        if use_async:
            fut = dcp.async_save(self._state(step), storage_writer=writer, process_group=self.async_group)
            self.pending = (fut, step, path)
        else:
            dcp.save(self._state(step), storage_writer=writer)
            self._prune()
        return path

    def wait(self):
        """Blocks until a running async save has finished."""
        if self.pending is not None:
            fut = self.pending[0]
            (fut.upload_completion if hasattr(fut, "upload_completion") else fut).result()
            self.pending = None
            self._prune()

    def _prune(self):
        if dist.get_rank() == 0 and self.keep > 0:
            for _, old in complete_checkpoints(self.dir)[:-self.keep]:
                shutil.rmtree(old, ignore_errors=True)

    def load_latest(self, say=print):
        """Loads the newest complete checkpoint (model, optimizer, this rank's RNG state); returns
        its step (0 if none). Torn or damaged checkpoints are named with their reason and skipped.
        Raises RuntimeError if it was written for a different model configuration."""
        # every rank must pick the same checkpoint: rank 0 decides
        found = complete_checkpoints(self.dir, report=lambda p, why: say(f"skipping checkpoint {p}: {why}")) \
            if dist.get_rank() == 0 else []
        choice = [found[-1] if found else None]
        dist.broadcast_object_list(choice, src=0)
        if choice[0] is None:
            return 0
        step, path = choice[0]
        saved = set(dcp.FileSystemReader(path).read_metadata().state_dict_metadata)
        trainer = {k: v for k, v in {"step": 0, "config": "", **dict.fromkeys(self.trainer)}.items()
                   if f"trainer.{k}" in saved}
        dcp.load({"trainer": trainer}, checkpoint_id=path)
        if trainer["config"] != self.config_json:
            raise RuntimeError(f"checkpoint {path} was written for model {trainer['config']}, this run builds "
                               f"{self.config_json}; pass the same model flags, another --ckpt-dir, or --no-resume")
        if "world_size" in trainer:  # another number of ranks: an elastic range's request, or an error
            from npudist.fsdp import check_world_size
            note = check_world_size(path, trainer["world_size"], dist.get_world_size(), self.reshard)
            if note:
                say(note)
        changed = {k: (trainer[k], v) for k, v in self.trainer.items()
                   if k in trainer and trainer[k] != v and k != "world_size"}
        if changed:
            say(f"resuming {path} with different {', '.join(f'{k} ({a} -> {b})' for k, (a, b) in changed.items())}: "
                f"the run goes on, but not bit for bit as an uninterrupted one")
        rank_key = f"rank_{dist.get_rank()}"
        rng = rng_state(self.device)
        has_rng = all(f"rng.{rank_key}.{k}" in saved for k in rng)
        state = self._state(step, rng=False)
        if has_rng:
            state["rng"] = {rank_key: rng}
        dcp.load(state, checkpoint_id=path)
        set_state_dict(self.model, self.opt, model_state_dict=state["model"], optim_state_dict=state["optim"])
        if has_rng:
            set_rng_state(state["rng"][rank_key], self.device)
        else:
            # an older checkpoint, or one written by fewer ranks: this rank keeps its seeded generators
            print(f"rank {dist.get_rank()}: {path} holds no RNG state for this rank; its generators are "
                  f"re-derived from --seed", file=sys.stderr, flush=True)
        lost = sorted(int(k.split(".")[1][5:]) for k in saved if k.startswith("rng.rank_") and k.endswith(".cpu")
                      and int(k.split(".")[1][5:]) >= dist.get_world_size())
        if lost and dist.get_rank() == 0:
            # their generators are not carried over: the survivors draw the dropout of the lost
            # ranks' samples from their own generators (docs/training.md, "Losing a host")
            print(f"{path}: the RNG states saved by rank(s) {lost} are not used (this run has {dist.get_world_size()} "
                  f"ranks): the random draws of their samples come from the remaining ranks' generators",
                  file=sys.stderr, flush=True)
        return int(state["trainer"]["step"])


# ---------------------------------------------------------------------------------------------
# training

_stop_signal = []


def _on_signal(signum, frame):
    _stop_signal.append(signum)


def lr_at(step, steps, lr, warmup):
    """Linear warm-up for `warmup` steps, then cosine decay to lr / 10 at `steps`."""
    if step < warmup:
        return lr * (step + 1) / warmup
    progress = min(1.0, (step - warmup) / max(1, steps - warmup))
    return lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * progress)))


@torch.no_grad()
def evaluate(model, batches):
    """Mean validation loss over every rank's batches (nats per byte), in eval mode (no dropout:
    evaluating draws nothing from the generators, so where the job evaluates does not change training)."""
    was_training = model.training
    model.eval()
    # on the model's device even for a rank without batches: hccl groups take npu tensors only
    total = torch.zeros(2, dtype=torch.float64, device=next(model.parameters()).device)
    for b in batches:
        _, loss = model(b[:, :-1].long(), b[:, 1:].long())
        total += torch.stack([loss.double().detach() * b.shape[0], torch.tensor(b.shape[0], device=b.device)])
    model.train(was_training)
    dist.all_reduce(total)
    return float(total[0] / total[1])


@torch.no_grad()
def generate(model, prompt: bytes, n_tokens, device, temperature=0.8, top_k=40, seed=1234):
    """Samples n_tokens bytes after prompt (every rank runs the same computation, as FSDP
    needs; the sampling generator is seeded identically). Returns the bytes generated."""
    gen = torch.Generator().manual_seed(seed)
    model.eval()
    ctx = torch.tensor(list(prompt), dtype=torch.long, device=device).unsqueeze(0)
    out = []
    for _ in range(n_tokens):
        logits, _ = model(ctx[:, -model.cfg.seq_len:])
        logits = logits[0, -1].float().cpu() / temperature
        v, i = logits.topk(top_k)
        nxt = i[torch.multinomial(torch.softmax(v, -1), 1, generator=gen)]
        out.append(int(nxt))
        ctx = torch.cat([ctx, nxt.to(device).view(1, 1)], dim=1)
    return bytes(out)


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    a = p.add_argument
    a("--steps", type=int, default=300, help="total optimizer steps (a resumed run continues up to this)")
    a("--batch-size", type=int, default=8, help="sequences per rank per step")
    a("--seq-len", type=int, default=64, help="context length in bytes")
    a("--d-model", type=int, default=256)
    a("--n-layer", type=int, default=4)
    a("--n-head", type=int, default=4)
    a("--lr", type=float, default=3e-3, help="peak learning rate (AdamW)")
    a("--warmup", type=int, default=30, help="linear warm-up steps")
    a("--weight-decay", type=float, default=0.1)
    a("--clip", type=float, default=1.0, help="gradient norm clipping (0: off)")
    a("--mp", choices=("bf16", "fp32"), default=None,
      help="bf16: MixedPrecisionPolicy(param_dtype=bfloat16, reduce_dtype=float32); fp32: no mixed precision "
           "(default: bf16, but fp32 with --replicate, --graphs or --device cpu)")
    a("--no-reshard-after-forward", action="store_true", help="keep gathered parameters from forward to backward")
    a("--compile", action="store_true",
      help="torch.compile each transformer block (Inductor; the first steps include compile time)")
    a("--log-every", type=int, default=25, help="progress line (with validation loss) every N steps")
    a("--eval-batches", type=int, default=4, help="validation batches per rank for each progress line")
    a("--ckpt-dir", default="checkpoints/train_gpt", help="DCP checkpoints go to CKPT_DIR/step_NNNNNNN")
    a("--ckpt-every", type=int, default=100, help="checkpoint every K steps (0: only at SIGTERM and the end)")
    a("--async-ckpt", action="store_true", help="periodic checkpoints with dcp.async_save on a dedicated group")
    a("--keep", type=int, default=2, help="complete checkpoints to keep (0: all)")
    a("--no-resume", action="store_true", help="start from scratch even if CKPT_DIR has a checkpoint")
    a("--reshard", action="store_true",
      help="resume a checkpoint written by another number of ranks (implied under npurun --nnodes MIN:MAX)")
    a("--global-batch", type=int, default=None,
      help="sequences per step over all ranks, kept when the number of ranks changes: each rank runs "
           "GLOBAL_BATCH / (ranks x --batch-size) micro-batches a step (default: --batch-size x ranks, one each)")
    a("--sample-len", type=int, default=200, help="bytes of generated text at the end (0: none)")
    a("--prompt", default="def ", help="prompt of the generated sample")
    a("--data-dir", default=None, help="directory of *.py files (default: the Python standard library)")
    a("--val-every", type=int, default=10, help="every N-th file (sorted by name) is validation data")
    a("--max-bytes", type=int, default=None, help="read files until this many bytes (default: all)")
    a("--seed", type=int, default=0)
    a("--dropout", type=float, default=0.0,
      help="dropout probability on the embeddings and each residual branch (training only)")
    a("--pg-timeout", type=float, default=None,
      help="timeout of the process groups in seconds (default: PyTorch's, 10 min): how long a rank waits in a "
           "collective for a lost peer before its watchdog ends the job")
    a("--device", choices=("npu", "cpu"), default="npu", help="cpu runs the same job on cpu + gloo")
    a("--replicate", action="store_true",
      help="replicated model (no FSDP2): one gradient all_reduce per step, capturable AdamW")
    a("--graphs", action="store_true",
      help="--replicate with the training step captured in an npu graph and replayed (docs/graph.md)")
    a("--loss-log", default=None, help="write every step's training loss (rank 0, full precision) to this file")
    a("--step-delay", type=float, default=0.0, help=argparse.SUPPRESS)  # tests: slow steps down
    args = p.parse_args(argv)
    for name in ("steps", "batch_size", "seq_len", "d_model", "n_layer", "n_head", "log_every"):
        if getattr(args, name) < 1:
            p.error(f"--{name.replace('_', '-')} must be >= 1, got {getattr(args, name)}")
    if not 0.0 <= args.dropout < 1.0:
        p.error(f"--dropout must be in [0, 1), got {args.dropout}")
    if args.pg_timeout is not None and not args.pg_timeout > 0:
        p.error(f"--pg-timeout must be > 0 seconds, got {args.pg_timeout}")
    if args.graphs and args.device != "npu":
        p.error("--graphs needs --device npu")
    if args.graphs:
        args.replicate = True
    if args.mp is None:  # the replicated/graph step trains in fp32; cpu bf16 is PyTorch's CPU half kernels
        args.mp = "fp32" if args.replicate or args.device == "cpu" else "bf16"
    if args.d_model % args.n_head:
        p.error(f"--d-model ({args.d_model}) must be a multiple of --n-head ({args.n_head})")
    return args


def main(argv=None):
    args = parse_args(argv)
    if "RANK" not in os.environ:
        sys.exit("train_gpt.py runs under a launcher: npurun --nproc 4 examples/train_gpt.py (or torchrun)")
    local_rank = int(os.environ.get("LOCAL_RANK", 0))
    if args.device == "npu":
        import npudist  # noqa: F401  (registers npu when torch's backend autoload is off)
        torch.npu.set_device(local_rank)
        device = torch.device("npu", local_rank)
    else:
        device = torch.device("cpu")
    pg_timeout = {"timeout": datetime.timedelta(seconds=args.pg_timeout)} if args.pg_timeout else {}
    dist.init_process_group(dist.get_default_backend_for_device(device),
                            device_id=device if device.type != "cpu" else None, **pg_timeout)
    rank, world = dist.get_rank(), dist.get_world_size()

    def say(*a):
        if rank == 0:
            print(*a, flush=True)

    for s in (signal.SIGTERM, signal.SIGINT):
        signal.signal(s, _on_signal)
    t_start = time.perf_counter()
    cfg = GPTConfig(seq_len=args.seq_len, d_model=args.d_model, n_layer=args.n_layer, n_head=args.n_head,
                    dropout=args.dropout)
    config_json = model_config_json(cfg)
    say(f"train_gpt: {world} ranks on {device.type} ({dist.get_backend()}), GPT {num_params(cfg) / 1e6:.2f}M "
        f"parameters {config_json}, mp={args.mp}{', compiled blocks' if args.compile else ''}, "
        f"batch {args.batch_size}x{args.seq_len} per rank")

    data = ByteData(args.seq_len, args.data_dir, args.val_every, args.max_bytes)
    say(f"data: {data.n_files[0]} train files ({data.n_bytes[0] / 1e6:.2f} MB, {data.train_rows.shape[0]} rows), "
        f"{data.n_files[1]} validation files ({data.n_bytes[1] / 1e6:.2f} MB); "
        f"unigram baseline {data.unigram_nats:.4f} nats/byte")

    if args.replicate:
        if args.mp != "fp32":
            sys.exit("--replicate / --graphs train in fp32: pass --mp fp32")
        if args.compile:
            sys.exit("--compile applies to the FSDP2 model; drop --replicate / --graphs or --compile")
        model = build_replicated_model(cfg, device, seed=args.seed)
    else:
        # FSDP2's default mesh is on the accelerator (npu here): --device cpu needs a cpu mesh
        mesh = init_device_mesh(device.type, (world,))
        model = build_fsdp_model(cfg, device, args.mp, not args.no_reshard_after_forward, mesh=mesh,
                                 seed=args.seed, compile=args.compile)
        say(f"FSDP2 {mp_policy(args.mp)}")
    decay = [p for n, p in model.named_parameters() if p.ndim >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.ndim < 2]
    groups = [{"params": decay, "weight_decay": args.weight_decay}, {"params": no_decay, "weight_decay": 0.0}]
    if args.replicate:
        # The lr is a tensor the captured step reads; it is set before every step.
        lr_tensor = torch.tensor(args.lr, device=device)
        opt = torch.optim.AdamW(groups, lr=lr_tensor, betas=(0.9, 0.95), capturable=True)
        run_step = ReplicatedStep(model, opt, lr_tensor, args.clip, args.batch_size, args.seq_len, device,
                                  graphs=args.graphs)
    else:
        opt = torch.optim.AdamW(groups, lr=args.lr, betas=(0.9, 0.95))
        run_step = None
    async_group = None
    if args.async_ckpt:
        from npudist.fsdp import checkpoint_process_group
        async_group = checkpoint_process_group(**pg_timeout)
    # the data order is a function of (seed, world size, batch size, step): a resume checks them
    ckpt = Checkpointer(args.ckpt_dir, model, opt, config_json, args.keep, async_group, device=device,
                        trainer={"seed": args.seed, "world_size": world, "batch_size": args.batch_size,
                                 "dropout": args.dropout, **({"global_batch": args.global_batch}
                                                             if args.global_batch else {})})
    ckpt.reshard = args.reshard
    start = 0 if args.no_resume else ckpt.load_latest(say)
    # a resumed run appends to the log of the run it continues
    loss_log = open(args.loss_log, "a" if start else "w") if args.loss_log and rank == 0 else None
    if start:
        say(f"resumed from {os.path.join(args.ckpt_dir, f'step_{start:07d}')} at step {start}")
        if start >= args.steps:
            say(f"the checkpoint is already at --steps {args.steps}: nothing to train (raise --steps to go on, "
                f"or --no-resume to start over)")

    # batches are made on the rank's npu by npudist.xp; --device cpu moves them (a no-op on npu)
    val = [b.to(device) for b in val_batches(data.val_rows, args.batch_size, args.eval_batches)]
    if args.global_batch:
        if args.replicate:
            sys.exit("--global-batch applies to the FSDP2 model; drop --replicate / --graphs")
        batches = ([b.to(device) for b in m]
                   for m in global_train_batches(data.train_rows, args.global_batch, args.batch_size, args.seed, start))
        micro = args.global_batch // (world * args.batch_size)
        say(f"global batch {args.global_batch}: {micro} micro-batch(es) of {args.batch_size} per rank a step")
    else:
        batches = ([b.to(device)] for b in train_batches(data.train_rows, args.batch_size, args.seed, start))
        micro = 1
    tokens_per_step = args.batch_size * args.seq_len * world * micro
    stop = torch.zeros(1, dtype=torch.int32, device=device)
    win_loss = torch.zeros(1, dtype=torch.float64, device=device)
    win_steps, win_time = 0, 0.0
    val_loss = float("nan")
    step = start
    if device.type == "npu":  # the printed peak is training's, not the data pipeline's (it ran on npu too)
        torch.npu.synchronize(device)
        torch.npu.reset_peak_memory_stats(device)
    stopped = False
    while step < args.steps:
        t0 = time.perf_counter()
        mbs = next(batches)
        if run_step is not None:
            loss = run_step(mbs[0], lr_at(step, args.steps, args.lr, args.warmup))
        else:
            for g in opt.param_groups:
                g["lr"] = lr_at(step, args.steps, args.lr, args.warmup)
            for i, b in enumerate(mbs):  # gradients accumulate over the micro-batches (mean over them)
                _, mb_loss = model(b[:, :-1].long(), b[:, 1:].long())
                (mb_loss / len(mbs) if len(mbs) > 1 else mb_loss).backward()
                loss = mb_loss.detach() if i == 0 else loss + mb_loss.detach()
            if len(mbs) > 1:
                loss = loss / len(mbs)
            if args.clip > 0:
                torch.nn.utils.clip_grad_norm_(model.parameters(), args.clip)
            opt.step()
            opt.zero_grad(set_to_none=True)
        if args.global_batch:  # the global batch's mean loss: comparable across numbers of ranks
            loss = loss.detach().clone()
            dist.all_reduce(loss, op=dist.ReduceOp.AVG)
        if loss_log:
            loss_log.write(f"{step + 1} {loss.item():.9g}\n")
            loss_log.flush()
        win_loss += loss.detach().double()
        if args.step_delay:
            time.sleep(args.step_delay)
        # one tiny all_reduce a step: every rank stops at the same step when any got a signal
        stop.fill_(1 if _stop_signal else 0)
        dist.all_reduce(stop, op=dist.ReduceOp.MAX)
        step += 1
        if start and step == start + 1:  # the end of a restart (the fault soak times restarts by it)
            say(f"first step after resume: step {step}")
        dt = time.perf_counter() - t0
        win_steps, win_time = win_steps + 1, win_time + dt
        record_step(dt, args.batch_size * args.seq_len * micro)  # this rank's tokens (Prometheus, docs/metrics.md)
        stopped = bool(stop.item())
        profiler_step(tokens=args.batch_size * args.seq_len * micro)  # npurun --profile: end of a step (docs/profiling.md)
        last = step == args.steps or stopped
        if step % args.log_every == 0 or last:
            val_loss = evaluate(model, val)
            dist.all_reduce(win_loss)
            train_loss = float(win_loss) / (win_steps * world)
            mem = torch.npu.memory_allocated(device) if device.type == "npu" else 0
            peak = torch.npu.max_memory_allocated(device) if device.type == "npu" else 0
            say(f"step {step:5d}/{args.steps} | loss {train_loss:.4f} | val {val_loss:.4f} | "
                f"{tokens_per_step * win_steps / win_time:8.0f} tok/s | {win_time / win_steps * 1e3:6.1f} ms/step | "
                f"npu mem {mem / 2**20:.1f} MiB (peak {peak / 2**20:.1f})")
            win_loss.zero_()
            win_steps, win_time = 0, 0.0
        if stopped:
            path = ckpt.save(step)
            say(f"signal {signal.Signals(_stop_signal[0]).name if _stop_signal else 'on another rank'}: "
                f"checkpoint {path} saved at step {step}; run the same command again to resume")
            break
        if args.ckpt_every and step % args.ckpt_every == 0 and step < args.steps:
            path = ckpt.save(step, use_async=args.async_ckpt)
            say(f"checkpoint {path}{' (async)' if args.async_ckpt else ''}")
    if not stopped:
        if step > start:
            path = ckpt.save(step)
            say(f"checkpoint {path}")
        ckpt.wait()
        if math.isnan(val_loss):
            val_loss = evaluate(model, val)
        if args.sample_len:
            sample = generate(model, args.prompt.encode(), args.sample_len, device, seed=args.seed)
            say("sample:\n" + (args.prompt.encode() + sample).decode("utf-8", errors="replace"))
        say(f"done: {step} steps, val loss {val_loss:.4f} nats/byte vs unigram baseline {data.unigram_nats:.4f} "
            f"({val_loss / data.unigram_nats:.0%} of it), {time.perf_counter() - t_start:.1f} s")
    dist.destroy_process_group()
    if stopped:
        sys.exit(EXIT_SIGTERM)


if __name__ == "__main__":
    main()
