"""Runs a tests/compat/workers script under ``npurun`` (the way the issue asks) and reads its RESULT lines.

The one place these tests start ranks; switch it to npudist.testing's shared
harness once that lands on main.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
WORKERS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "workers")
_RESULT = re.compile(r"^\[rank(\d+)\]: RESULT (.*)$")
_CLEAN = ("NPUDIST_DEVICE_COUNT", "NPUDIST_DEVICE_MEMORY", "ASCEND_RT_VISIBLE_DEVICES", "OMP_NUM_THREADS",
          "LOCAL_RANK", "RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")


def npurun(script: str, nproc: int = 2, args=(), env=None, timeout: float = 300) -> tuple[subprocess.CompletedProcess, dict]:
    """Runs ``npurun --nproc N workers/<script> args``; returns (process, {rank: [RESULT dicts]}).

    Fails (AssertionError with both streams) when npurun exits non-zero.
    """
    full_env = {k: v for k, v in os.environ.items() if k not in _CLEAN and not k.startswith("PET_")}
    full_env["PYTHONPATH"] = REPO + os.pathsep + full_env.get("PYTHONPATH", "")
    full_env.update(env or {})
    with tempfile.TemporaryDirectory(prefix="npudist-compat-") as tmp:
        full_env.setdefault("TMPDIR", tmp)
        cmd = [sys.executable, "-m", "npurun", "--nproc", str(nproc), os.path.join(WORKERS, script), *map(str, args)]
        proc = subprocess.run(cmd, env=full_env, capture_output=True, text=True, timeout=timeout, cwd=tmp)
    results: dict[int, list] = {}
    for line in proc.stdout.splitlines():
        m = _RESULT.match(line)
        if m:
            results.setdefault(int(m.group(1)), []).append(json.loads(m.group(2)))
    assert proc.returncode == 0, f"npurun {script} failed ({proc.returncode}):\n{proc.stdout[-6000:]}\n{proc.stderr[-6000:]}"
    assert sorted(results) == list(range(nproc)), f"missing RESULT lines:\n{proc.stdout[-4000:]}"
    return proc, results
