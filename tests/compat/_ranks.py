"""Runs a tests/compat/workers script under ``npurun`` (npudist.testing's shared harness) and reads
its ``RESULT <json>`` lines."""
from __future__ import annotations

import json
import os
import re
import subprocess
import tempfile

from npudist.testing.npurun import run_npurun

WORKERS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "workers")
_RESULT = re.compile(r"^\[rank(\d+)\]: RESULT (.*)$")


def npurun(script: str, nproc: int = 2, args=(), env=None, timeout: float = 300) -> tuple[subprocess.CompletedProcess, dict]:
    """Runs ``npurun --nproc N workers/<script> args``; returns (process, {rank: [RESULT dicts]}).

    Fails (AssertionError with both streams) when npurun exits non-zero or a rank reported nothing.
    """
    with tempfile.TemporaryDirectory(prefix="npudist-compat-") as tmp:
        proc = run_npurun(["--nproc", nproc, os.path.join(WORKERS, script), *args],
                          env={"TMPDIR": tmp, **(env or {})}, timeout=timeout, cwd=tmp)
    results: dict[int, list] = {}
    for line in proc.stdout.splitlines():
        m = _RESULT.match(line)
        if m:
            results.setdefault(int(m.group(1)), []).append(json.loads(m.group(2)))
    assert proc.returncode == 0, f"npurun {script} failed ({proc.returncode}):\n{proc.stdout[-6000:]}\n{proc.stderr[-6000:]}"
    assert sorted(results) == list(range(nproc)), f"missing RESULT lines:\n{proc.stdout[-4000:]}"
    return proc, results
