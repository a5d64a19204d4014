"""Helpers for launcher tests: start npurun as a real process, read its output, free ports."""
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
JOB = os.path.join(HERE, "workers", "job.py")
NPURUN = [sys.executable, "-m", "npurun"]
_CLEAN_ENV = ("NPUDIST_DEVICE_COUNT", "ASCEND_RT_VISIBLE_DEVICES", "OMP_NUM_THREADS", "NPUDIST_JOB_TAG",
              "NPUDIST_HOSTNAME", "TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE")


# npurun keeps the temporary log directory of a failed run: give the tests' runs their own TMPDIR
_TMPDIR = tempfile.mkdtemp(prefix="npurun-tests-")


def pytest_sessionfinish(session, exitstatus):
    shutil.rmtree(_TMPDIR, ignore_errors=True)


def npurun_env(extra=None):
    env = {k: v for k, v in os.environ.items() if k not in _CLEAN_ENV and not k.startswith("PET_")}
    env["TMPDIR"] = _TMPDIR
    env.update(extra or {})
    return env


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_npurun(args, env=None, timeout=120):
    """Runs npurun to completion; returns the CompletedProcess (text)."""
    return subprocess.run(NPURUN + list(args), env=npurun_env(env), capture_output=True, text=True,
                          timeout=timeout, cwd=HERE)


class Running:
    """npurun started in the background; its stdout and stderr are collected line by line."""

    def __init__(self, args, env=None):
        self.proc = subprocess.Popen(NPURUN + list(args), env=npurun_env(env), stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True, cwd=HERE)
        self.out, self.err = [], []
        self._threads = [threading.Thread(target=self._pump, args=(s, d), daemon=True)
                         for s, d in ((self.proc.stdout, self.out), (self.proc.stderr, self.err))]
        for t in self._threads:
            t.start()

    @staticmethod
    def _pump(stream, dest):
        for line in stream:
            dest.append(line.rstrip("\n"))

    def wait_for(self, pattern, count=1, timeout=90):
        """Waits until ``count`` stdout lines match ``pattern``; returns their match objects."""
        rx = re.compile(pattern)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = [m for m in map(rx.search, list(self.out)) if m]
            if len(found) >= count:
                return found
            if self.proc.poll() is not None:
                time.sleep(0.2)
                found = [m for m in map(rx.search, list(self.out)) if m]
                if len(found) >= count:
                    return found
                break
            time.sleep(0.05)
        raise AssertionError(f"timed out waiting for {count}x {pattern!r}\nstdout:\n" + "\n".join(self.out)
                             + "\nstderr:\n" + "\n".join(self.err))

    def finish(self, timeout=120):
        """Waits for npurun to exit (a hang fails the test); returns (exit code, stdout, stderr)."""
        try:
            code = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            raise
        for t in self._threads:
            t.join(10)
        return code, "\n".join(self.out), "\n".join(self.err)


def facts(stdout):
    """{rank: {key: value}} from the workers' ``KEY=VALUE`` lines (prefix ``[rankN]: `` stripped)."""
    result = {}
    for line in stdout.splitlines():
        m = re.match(r"^\[rank(\d+)\]: (\w+=\S+(?: \w+=\S+)*)$", line)
        if m:
            kv = dict(item.split("=", 1) for item in m.group(2).split())
            result.setdefault(int(m.group(1)), {}).update(kv)
    return result


@pytest.fixture
def shm_of():
    """shm_of(tag) -> the job's entries left in /dev/shm."""
    return lambda tag: sorted(f for f in os.listdir("/dev/shm") if f.startswith(f"npudist-{tag}-"))
