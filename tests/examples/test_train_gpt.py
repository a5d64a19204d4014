"""The flagship job (examples/train_gpt.py) under npurun: trains a few steps with FSDP2 on npu,
is stopped with SIGTERM (npurun forwards it; the ranks agree on a step, save a DCP checkpoint
and exit 143), then resumes from that checkpoint, finishes, beats the unigram baseline and
prints a sample."""
import os
import re
import signal
import subprocess
import threading
import time

import pytest

from npudist.testing.npurun import NPURUN, npurun_env

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TINY = ["--d-model", "64", "--n-layer", "2", "--n-head", "2", "--seq-len", "32", "--batch-size", "8",
        "--max-bytes", "400000", "--log-every", "5", "--ckpt-every", "10", "--warmup", "5", "--sample-len", "24",
        "--lr", "1e-2"]
PROGRESS = re.compile(r"step +(\d+)/\d+ \| loss ([\d.]+) \| val ([\d.]+) \| +(\d+) tok/s")


def command(args, ckpt_dir):
    return [*NPURUN, "--nproc", "2", "examples/train_gpt.py", *TINY, "--ckpt-dir", str(ckpt_dir), *args]


def npurun(args, ckpt_dir):
    return subprocess.Popen(command(args, ckpt_dir), cwd=REPO, env=npurun_env(), stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)


class Lines:
    """Collects a process's output lines in a thread; wait_for(regex) blocks until one matches."""

    def __init__(self, proc):
        self.lines, self.cond = [], threading.Condition()
        self.t = threading.Thread(target=self._read, args=(proc,), daemon=True)
        self.t.start()

    def _read(self, proc):
        for line in proc.stdout:
            with self.cond:
                self.lines.append(line)
                self.cond.notify_all()

    def wait_for(self, pattern, timeout):
        end = time.monotonic() + timeout
        with self.cond:
            while True:
                for line in self.lines:
                    if re.search(pattern, line):
                        return line
                left = end - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"no line matching {pattern!r} within {timeout} s:\n{self.text()[-4000:]}")
                self.cond.wait(left)

    def text(self):
        return "".join(self.lines)


@pytest.mark.timeout(400)
def test_sigterm_checkpoint_and_resume(tmp_path):
    ckpt = tmp_path / "ckpt"
    p = npurun(["--steps", "500", "--step-delay", "0.1"], ckpt)
    out = Lines(p)
    try:
        out.wait_for(r"step +10/500 ", timeout=240)
        out.wait_for(r"checkpoint .*step_0000010", timeout=60)
        p.send_signal(signal.SIGTERM)
        rc = p.wait(timeout=120)
    finally:
        if p.poll() is None:
            p.kill()
    out.t.join(10)
    text = out.text()
    assert rc == 143, text[-4000:]
    # rank 0 names the signal if it saw it first, else the flag came from the other rank
    m = re.search(r"signal (SIGTERM|on another rank): checkpoint (\S+) saved at step (\d+)", text)
    assert m, text[-4000:]
    stopped = int(m.group(3))
    assert stopped >= 10 and os.path.exists(os.path.join(m.group(2), ".metadata")), text[-3000:]
    first = [PROGRESS.search(line) for line in text.splitlines()]
    first = [x for x in first if x]
    base = float(re.search(r"unigram baseline ([\d.]+)", text).group(1))

    end = stopped + 60
    # (only this run: the resumed job must not race another one over the same checkpoint directory)
    r = subprocess.run(command(["--steps", str(end)], ckpt), cwd=REPO, capture_output=True, text=True,
                       timeout=300, env=npurun_env())
    text2 = r.stdout + r.stderr
    assert r.returncode == 0, text2[-4000:]
    assert f"resumed from {ckpt}/step_{stopped:07d} at step {stopped}" in text2, text2[-3000:]
    steps2 = [PROGRESS.search(line) for line in text2.splitlines()]
    steps2 = [x for x in steps2 if x]
    # the run continued where it stopped: step numbers go on, the loss did not restart from scratch
    assert int(steps2[0].group(1)) > stopped and int(steps2[-1].group(1)) == end, text2[-3000:]
    assert float(steps2[0].group(2)) < float(first[0].group(2)), (first[0].group(0), steps2[0].group(0))
    m = re.search(r"done: (\d+) steps, val loss ([\d.]+) nats/byte vs unigram baseline ([\d.]+)", text2)
    assert m and int(m.group(1)) == end, text2[-3000:]
    assert float(m.group(3)) == base
    assert float(m.group(2)) < base, f"val loss {m.group(2)} not below the unigram baseline {base}"
    assert "sample:" in text2
    assert os.path.exists(ckpt / f"step_{end:07d}" / ".metadata")


@pytest.mark.timeout(300)
def test_device_cpu_runs_the_same_job_on_gloo(tmp_path):
    """--device cpu: FSDP2 on a cpu mesh with gloo, batches made by npudist.xp moved to cpu."""
    r = subprocess.run(command(["--device", "cpu", "--steps", "6", "--mp", "fp32"], tmp_path / "ckpt"), cwd=REPO,
                       capture_output=True, text=True, timeout=280, env=npurun_env())
    text = r.stdout + r.stderr
    assert r.returncode == 0, text[-4000:]
    assert "2 ranks on cpu (gloo)" in text, text[-3000:]
    assert re.search(r"done: 6 steps, val loss [\d.]+ nats/byte", text), text[-3000:]
