"""The flagship job (examples/train_gpt.py, dropout on) under injected faults finishes with the
losses and the final state of an unfaulted run, bit for bit: a rank killed at a step, and a rank
killed half-way through writing a checkpoint (sync and async_save), restarted by
``npurun --max-restarts``, resume from the newest complete checkpoint (the torn one is named and
skipped). Two ranks, a tiny model, 12 steps, checkpoints every 4."""
import os
import re
import subprocess

import pytest
import torch

from npudist.testing.npurun import NPURUN, npurun_env

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
STEPS = 12
ARGS = ["--d-model", "32", "--n-layer", "2", "--n-head", "2", "--seq-len", "16", "--batch-size", "4",
        "--max-bytes", "200000", "--log-every", "6", "--eval-batches", "1", "--ckpt-every", "4", "--warmup", "3",
        "--sample-len", "0", "--dropout", "0.2", "--steps", str(STEPS), "--keep", "0"]


def train(tmp, name, *extra, npurun_args=()):
    ckpt, log = tmp / name, tmp / f"{name}.loss"
    cmd = [*NPURUN, "--nproc", "2", *npurun_args, "examples/train_gpt.py", *ARGS, "--ckpt-dir", str(ckpt),
           "--loss-log", str(log), *extra]
    r = subprocess.run(cmd, cwd=REPO, env=npurun_env(), capture_output=True, text=True, timeout=560)
    text = r.stdout + r.stderr
    assert r.returncode == 0, text[-5000:]
    return ckpt, log, text


def losses(log):
    """{step: loss text}; a step trained twice (before a fault and after the restart) must agree."""
    out = {}
    for line in log.read_text().splitlines():
        step, loss = line.split()
        assert out.setdefault(int(step), loss) == loss, f"step {step} trained twice gave {out[int(step)]} and {loss}"
    return out


def final_state(ckpt, tmp, name):
    from torch.distributed.checkpoint.format_utils import dcp_to_torch_save
    out = tmp / f"{name}.pt"
    dcp_to_torch_save(str(ckpt / f"step_{STEPS:07d}"), str(out))
    return torch.load(out, weights_only=False)


def assert_same_state(a, b):
    def flat(d, prefix=""):
        for k, v in d.items():
            if isinstance(v, dict):
                yield from flat(v, f"{prefix}{k}.")
            else:
                yield f"{prefix}{k}", v
    fa, fb = dict(flat(a)), dict(flat(b))
    assert fa.keys() == fb.keys()
    assert any(k.startswith("rng.rank_1.npu") for k in fa) and any(k.startswith("optim.") for k in fa), list(fa)
    for k, v in fa.items():
        if isinstance(v, torch.Tensor):
            assert v.dtype == fb[k].dtype and torch.equal(v, fb[k]), f"{k} differs"
        else:
            assert v == fb[k], f"{k}: {v!r} != {fb[k]!r}"


@pytest.fixture(scope="module")
def unfaulted(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("unfaulted")
    ckpt, log, _ = train(tmp, "ref")
    ref = losses(log)
    assert sorted(ref) == list(range(1, STEPS + 1))
    return ref, final_state(ckpt, tmp, "ref")


def check(unfaulted, tmp, name, ckpt, log, text, resumed_at):
    ref_losses, ref_state = unfaulted
    assert f"resumed from {ckpt}/step_{resumed_at:07d} at step {resumed_at}" in text, text[-5000:]
    assert losses(log) == ref_losses
    assert_same_state(final_state(ckpt, tmp, name), ref_state)


@pytest.mark.timeout(900)
def test_kill_at_a_step_resumes_bit_exact(unfaulted, tmp_path):
    ckpt, log, text = train(tmp_path, "kill", npurun_args=["--max-restarts", "1", "--inject-fault",
                                                           "rank=1,step=7,kind=kill"])
    assert "[npudist fault] rank 1: SIGKILL at step 7" in text, text[-5000:]
    check(unfaulted, tmp_path, "kill", ckpt, log, text, resumed_at=4)


@pytest.mark.timeout(900)
@pytest.mark.parametrize("mode,rank", [("sync", 1), ("async", 0)])
def test_kill_during_a_checkpoint_write_resumes_from_the_previous_one(unfaulted, tmp_path, mode, rank):
    extra = ["--async-ckpt"] if mode == "async" else []
    ckpt, log, text = train(tmp_path, mode, *extra, npurun_args=[
        "--max-restarts", "1", "--inject-fault", f"rank={rank},ckpt_write=2,kind=kill"])
    assert re.search(rf"\[npudist fault\] rank {rank}: SIGKILL during checkpoint write #2 \(__{rank}_0.distcp\)", text), \
        text[-5000:]
    # the torn step-8 checkpoint is named with its reason and skipped; the job resumes from step 4
    assert f"skipping checkpoint {ckpt}/step_0000008: no .metadata (the save did not finish)" in text, text[-5000:]
    check(unfaulted, tmp_path, mode, ckpt, log, text, resumed_at=4)
