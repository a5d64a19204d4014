"""Running the flagship job (examples/train_gpt.py) under npurun from tests, soaks and benchmarks,
and comparing what two runs produced: every step's loss (``--loss-log``) and the final DCP
checkpoint (model, optimizer, every rank's RNG state), bit for bit."""
from __future__ import annotations

import subprocess
import threading
import time

from npudist.testing.npurun import NPURUN, REPO, npurun_env

# A model small enough for a loaded 2-core machine; dropout on, so RNG state matters.
TINY = ["--d-model", "32", "--n-layer", "2", "--n-head", "2", "--seq-len", "16", "--batch-size", "4",
        "--max-bytes", "200000", "--eval-batches", "1", "--warmup", "3", "--sample-len", "0", "--dropout", "0.1",
        "--keep", "0"]


def run_flagship(npurun_args, job_args, ckpt_dir, loss_log, env=None, timeout=900.0):
    """Runs ``npurun NPURUN_ARGS examples/train_gpt.py JOB_ARGS --ckpt-dir --loss-log``; returns
    (lines: [(seconds since start, line)], wall seconds, exit code). stderr is merged into stdout.
    Raises subprocess.TimeoutExpired (after killing npurun) past ``timeout``."""
    cmd = [*NPURUN, *map(str, npurun_args), "examples/train_gpt.py", *map(str, job_args), "--ckpt-dir",
           str(ckpt_dir), "--loss-log", str(loss_log)]
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, cwd=REPO, env=npurun_env(env), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         text=True)
    lines: list[tuple[float, str]] = []

    def read():
        for line in p.stdout:
            lines.append((time.monotonic() - t0, line))

    t = threading.Thread(target=read, daemon=True)
    t.start()
    try:
        rc = p.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()
        raise
    t.join(10)
    return lines, time.monotonic() - t0, rc


def read_losses(loss_log) -> dict[int, str]:
    """{step: loss text} from a --loss-log file; a step trained twice (before a fault and after
    the restart) must have the same loss, else ValueError."""
    out: dict[int, str] = {}
    with open(loss_log) as f:
        for line in f:
            step, loss = line.split()
            if out.setdefault(int(step), loss) != loss:
                raise ValueError(f"step {step} trained twice gave {out[int(step)]} and {loss}")
    return out


def load_checkpoint(path, scratch_file):
    """The whole DCP checkpoint at ``path`` as one nested dict (via dcp_to_torch_save into ``scratch_file``)."""
    import torch
    from torch.distributed.checkpoint.format_utils import dcp_to_torch_save

    dcp_to_torch_save(str(path), str(scratch_file))
    return torch.load(scratch_file, weights_only=False)


def differences(a, b, prefix="") -> list[str]:
    """Keys whose values differ between two nested state dicts (tensors: dtype and every bit)."""
    import torch

    if isinstance(a, dict) and isinstance(b, dict):
        out = [f"{prefix}{k}: only in one" for k in sorted(set(a) ^ set(b), key=str)]
        for k in a.keys() & b.keys():
            out += differences(a[k], b[k], f"{prefix}{k}.")
        return out
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        same = isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and a.dtype == b.dtype and torch.equal(a, b)
        return [] if same else [prefix.rstrip(".")]
    return [] if a == b else [prefix.rstrip(".")]


__all__ = ["TINY", "differences", "load_checkpoint", "read_losses", "run_flagship"]
