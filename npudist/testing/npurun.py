"""Start ``npurun`` itself as a real process, under the harness's environment policy
(:func:`npudist.testing.multiproc.clean_env`), and read what its ranks printed.

    from npudist.testing.npurun import Npurun, run_npurun, facts

    done = run_npurun(["--nproc", "2", "job.py"], env={"TMPDIR": str(tmp_path)}, timeout=120)
    assert done.returncode == 0, done.stderr
    assert facts(done.stdout)[1]["RANK"] == "1"            # the workers' KEY=VALUE lines

    job = Npurun(["--nproc", "2", "--metrics-port", port, "job.py"])   # in the background
    job.wait_for(r"step 3")                                 # a stdout line matching a regex
    code, out, err = job.finish(timeout=120)

Unlike spawned ranks, npurun sets OMP_NUM_THREADS and the rank variables itself, so the policy
here only clears what the caller's environment would otherwise leak into the job.
"""
from __future__ import annotations

import re
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence

from npudist.testing.multiproc import REPO, clean_env

NPURUN = [sys.executable, "-m", "npurun"]
"""The command that starts npurun with this interpreter."""


def npurun_env(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment for an npurun process: :func:`~npudist.testing.multiproc.clean_env`
    (no inherited NPUDIST_/HCCL_/TORCH_HCCL_/ASCEND_/PET_/TORCHELASTIC_ variables, no
    OMP_NUM_THREADS, the repository on PYTHONPATH) plus ``env``."""
    return clean_env(env)


def run_npurun(args: Sequence, env: Mapping[str, str] | None = None, timeout: float | None = 120.0,
               cwd: str | None = None) -> subprocess.CompletedProcess:
    """Runs ``npurun ARGS`` to completion; returns the CompletedProcess (text, captured).
    Raises subprocess.TimeoutExpired (after killing npurun) past ``timeout`` seconds (None: no limit)."""
    return subprocess.run(NPURUN + [str(a) for a in args], env=npurun_env(env), capture_output=True, text=True,
                          timeout=timeout, cwd=cwd or REPO)


class Npurun:
    """npurun started in the background; its stdout and stderr are collected line by line
    (``out``, ``err``: lists of str) by two reader threads.

    stderr: pass ``subprocess.STDOUT`` to merge stderr into ``out``.
    """

    def __init__(self, args: Sequence, env: Mapping[str, str] | None = None, cwd: str | None = None,
                 stderr=subprocess.PIPE):
        self.proc = subprocess.Popen(NPURUN + [str(a) for a in args], env=npurun_env(env), stdout=subprocess.PIPE,
                                     stderr=stderr, stdin=subprocess.DEVNULL, text=True, cwd=cwd or REPO)
        self.out: list[str] = []
        self.err: list[str] = []
        streams = [(self.proc.stdout, self.out)] + ([(self.proc.stderr, self.err)] if self.proc.stderr else [])
        self._threads = [threading.Thread(target=self._pump, args=(s, d), daemon=True) for s, d in streams]
        for t in self._threads:
            t.start()

    @property
    def pid(self) -> int:
        return self.proc.pid

    @staticmethod
    def _pump(stream, dest):
        for line in stream:
            dest.append(line.rstrip("\n"))

    def poll(self):
        return self.proc.poll()

    def send_signal(self, sig: int) -> None:
        self.proc.send_signal(sig)

    def wait_for(self, pattern: str, count: int = 1, timeout: float = 90.0):
        """Waits until ``count`` stdout lines match the regex ``pattern``; returns their match
        objects. Raises AssertionError with the output so far on timeout or when npurun exits first."""
        rx = re.compile(pattern)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = [m for m in map(rx.search, list(self.out)) if m]
            if len(found) >= count:
                return found
            if self.proc.poll() is not None:
                for t in self._threads:
                    t.join(5)
                found = [m for m in map(rx.search, list(self.out)) if m]
                if len(found) >= count:
                    return found
                break
            time.sleep(0.05)
        raise AssertionError(f"timed out waiting for {count}x {pattern!r} (npurun exit {self.proc.poll()})\n"
                             + self.explain())

    def explain(self, tail: int = 200) -> str:
        """The last ``tail`` lines of stdout and stderr, for an assertion message."""
        return "stdout:\n" + "\n".join(self.out[-tail:]) + "\nstderr:\n" + "\n".join(self.err[-tail:])

    def finish(self, timeout: float = 120.0):
        """Waits for npurun to exit; returns (exit code, stdout, stderr) as str. Past ``timeout``
        seconds npurun is killed and subprocess.TimeoutExpired raised (a hang fails the test)."""
        try:
            code = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise
        for t in self._threads:
            t.join(10)
        return code, "\n".join(self.out), "\n".join(self.err)

    def stop(self, grace: float = 30.0) -> None:
        """Ends npurun if it still runs: SIGTERM (npurun forwards it to its ranks), then SIGKILL
        after ``grace`` seconds."""
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(grace)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def facts(stdout: str) -> dict[int, dict[str, str]]:
    """``{rank: {key: value}}`` from the workers' ``KEY=VALUE`` lines as npurun prints them
    (with its ``[rankN]: `` prefix)."""
    result: dict[int, dict[str, str]] = {}
    for line in stdout.splitlines():
        m = re.match(r"^\[rank(\d+)\]: (\w+=\S+(?: \w+=\S+)*)$", line)
        if m:
            kv = dict(item.split("=", 1) for item in m.group(2).split())
            result.setdefault(int(m.group(1)), {}).update(kv)
    return result
