"""The multi-rank harness itself (npudist.testing.multiproc / .checks / .npurun): the environment
policy, the result protocol, failure output and timeouts, with real rank processes that do not
import torch (fast)."""
import os
import signal

import pytest

from npudist.testing import multiproc
from npudist.testing.npurun import npurun_env

ENV_DUMP = r"""
import json, os, sys
keys = [k for k in os.environ if k.startswith(("NPUDIST_", "HCCL_", "TORCH_HCCL_", "ASCEND_", "PET_"))]
print("RESULT " + json.dumps({k: os.environ.get(k) for k in keys + ["RANK", "WORLD_SIZE", "LOCAL_RANK",
      "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "OMP_NUM_THREADS", "PYTHONPATH"]}))
print("noise")
print("RESULT " + json.dumps({"argv": sys.argv[1:], "cwd": os.getcwd()}))
"""


def test_environment_policy_and_results(monkeypatch):
    for k, v in {"NPUDIST_DEVICE_COUNT": "3", "HCCL_BUFFSIZE": "9", "TORCH_HCCL_TRACE_BUFFER_SIZE": "1",
                 "ASCEND_RT_VISIBLE_DEVICES": "1", "PET_NPROC_PER_NODE": "2", "OMP_NUM_THREADS": "7",
                 "RANK": "5"}.items():
        monkeypatch.setenv(k, v)
    r = multiproc.launch(["-c", ENV_DUMP, "x", 3], 3, env={"HCCL_CONNECT_TIMEOUT": "20", "PET_X": None},
                         hosts=["hA", "hA", "hB"], timeout=120)
    assert r.ok(), r.explain()
    ports = set()
    for rank in range(3):
        env, extra = r.results(rank)
        assert extra == {"argv": ["x", "3"], "cwd": multiproc.REPO}
        assert env["RANK"] == env["LOCAL_RANK"] == str(rank) and env["WORLD_SIZE"] == env["LOCAL_WORLD_SIZE"] == "3"
        assert env["MASTER_ADDR"] == "127.0.0.1" and env["OMP_NUM_THREADS"] == "1"
        assert env["PYTHONPATH"].split(os.pathsep)[0] == multiproc.REPO
        assert env["NPUDIST_HOSTNAME"] == ["hA", "hA", "hB"][rank]
        assert env["HCCL_CONNECT_TIMEOUT"] == "20"
        fr = env.pop("TORCH_HCCL_DEBUG_INFO_TEMP_FILE")
        assert fr.endswith("fr_rank_") and not os.path.exists(os.path.dirname(fr))  # removed after the launch
        # nothing else of the caller's NPUDIST_/HCCL_/TORCH_HCCL_/ASCEND_/PET_ variables reached the rank
        assert {k for k in env if k.startswith(("NPUDIST_", "HCCL_", "ASCEND_", "PET_", "TORCH_HCCL_"))} == \
            {"NPUDIST_HOSTNAME", "HCCL_CONNECT_TIMEOUT"}, env
        ports.add(env["MASTER_PORT"])
    assert len(ports) == 1 and r.summary(0) is None
    env = npurun_env({"X_Y": "1"})
    assert "OMP_NUM_THREADS" not in env and "NPUDIST_DEVICE_COUNT" not in env and env["X_Y"] == "1"


def test_failures_are_explained_and_checked():
    # the summary a Checker prints (built here: importing npudist in the ranks would cost seconds)
    code = ("import json, os, sys\nrank = int(os.environ['RANK'])\n"
            "s = {'kind': 'summary', 'rank': rank, 'checks': 1, 'failures': ['rank is 0: rank 1'] if rank else []}\n"
            "print('RESULT ' + json.dumps(s))\nprint('to stderr', file=sys.stderr)\nsys.exit(3 if rank else 0)\n")
    r = multiproc.launch(["-c", code], 2, timeout=120)
    assert not r.ok() and not r.timed_out and r.returncodes == [0, 3]
    assert r.summary(0) == {"kind": "summary", "rank": 0, "checks": 1, "failures": []}
    assert r.summary(1)["failures"] == ["rank is 0: rank 1"] and r.stderr[1].strip() == "to stderr"
    text = r.explain()
    assert "--- rank 1 exit 3" in text and "to stderr" in text and "timed out: False" in text
    with pytest.raises(AssertionError, match="rank 1 exit 3"):
        r.check()


def test_timeout_kills_every_rank():
    r = multiproc.launch(["-c", "import os, time\nprint('up', flush=True)\n"
                          "time.sleep(0 if os.environ['RANK'] == '0' else 600)"], 2, timeout=5)
    assert r.timed_out and r.returncodes == [0, -signal.SIGKILL], r.explain()
    assert r.stdout == ["up\n", "up\n"] and "SIGKILL" in r.explain()


def test_bad_arguments():
    with pytest.raises(ValueError, match="one per rank"):
        multiproc.launch(["-c", "pass"], 2, hosts=["a"])
    with pytest.raises(ValueError, match="nranks"):
        multiproc.launch(["-c", "pass"], 0)


def test_checker_close():
    torch = pytest.importorskip("torch")
    from npudist.testing.checks import Checker

    c = Checker()
    assert c.close(torch.tensor([1.0, float("nan")]), torch.tensor([1.0 + 1e-7, float("nan")]), "fp32 within")
    assert not c.close(torch.tensor([1.0]), torch.tensor([1.001]), "fp32 outside")
    assert c.close(torch.tensor([1.0], dtype=torch.float16), torch.tensor([1.001], dtype=torch.float16), "fp16")
    assert not c.close(torch.tensor([1], dtype=torch.int32), torch.tensor([1]), "dtype differs")
    assert c.close(torch.tensor([1], dtype=torch.int32), torch.tensor([1.0]), "dtype ignored", exact_dtype=False)
    assert not c.close(torch.tensor([1, 2]), torch.tensor([1, 3]), "ints exact")
    assert not c.close(torch.ones(2), torch.ones(3), "shape")
    assert Checker(tol_scale=1000).close(torch.tensor([1.0]), torch.tensor([1.001]), "scaled")
    assert c.checks == 7 and [f.split(":")[0] for f in c.failures] == [
        "fp32 outside", "dtype differs", "ints exact", "shape"]
    assert c.run("ok", lambda x: x + 1, 1) == 2 and c.run("bad", lambda: 1 / 0) is None
    assert "ZeroDivisionError" in c.failures[-1]
    assert c.summary(extra=1) == {"kind": "summary", "rank": int(os.environ.get("RANK", "0")), "checks": 9,
                                  "failures": c.failures, "nfail": 5, "info": {}, "extra": 1}


# A rank's view of how it was started: its parent, whether npu was registered by `import torch`
# alone (the torch.backends autoload) and torch.distributed's debug level (read at import).
STARTED = r"""
import json, os
import torch
import torch.distributed as dist
print("RESULT " + json.dumps({"ppid": os.getppid(), "npu": hasattr(torch, "npu") and torch.npu.is_available(),
      "debug": str(dist.get_debug_level()), "threads": torch.get_num_threads()}))
"""


def test_script_ranks_are_forked_warm_and_see_what_a_fresh_interpreter_sees():
    """launch() forks script ranks from the zygote (their parent is not this process), runs the
    torch.backends autoload in the rank (npu usable after a bare `import torch`, unless the rank's
    environment turns the autoload off), and starts a rank fresh when its environment sets an
    import-time variable (TORCH_DISTRIBUTED_DEBUG) or when zygote=False."""
    warm = multiproc.launch(["-c", STARTED], 2, timeout=180).check("warm")
    off = multiproc.launch(["-c", STARTED], 1, env={"TORCH_DEVICE_BACKEND_AUTOLOAD": "0"}, timeout=180).check("off")
    debug = multiproc.launch(["-c", STARTED], 1, env={"TORCH_DISTRIBUTED_DEBUG": "DETAIL"}, timeout=180).check("dbg")
    fresh = multiproc.launch(["-c", STARTED], 1, zygote=False, timeout=180).check("fresh")
    (w0,), (w1,) = warm.results(0), warm.results(1)
    assert w0["ppid"] == w1["ppid"] != os.getpid() and w0["npu"] and w0["threads"] == 1, (w0, w1)
    assert not off.results(0)[0]["npu"]
    (d,) = debug.results(0)
    assert d["ppid"] == os.getpid() and d["debug"].endswith("DETAIL") and d["npu"], d
    (f,) = fresh.results(0)
    assert f["ppid"] == os.getpid() and f["npu"] and f["threads"] == 1, f


def test_run_python_forks_warm_and_keeps_subprocess_run_semantics(tmp_path):
    """run_python forks from the zygote (parent: not this process) with the same returncode,
    stdout, stderr and TimeoutExpired a fresh ``subprocess.run`` gives; a failing snippet fails;
    an import-time variable (TORCH_LOGS) or fresh=True starts a fresh interpreter."""
    import subprocess

    code = ["-c", "import os, sys; print(os.getppid(), sys.argv[1:], os.getcwd()); "
                  "print('to stderr', file=sys.stderr); sys.exit(int(sys.argv[1]))", "3"]
    warm = multiproc.run_python(code, cwd=str(tmp_path), timeout=180)
    ppid, rest = warm.stdout.split(maxsplit=1)
    assert warm.returncode == 3 and rest.split() == ["['3']", str(tmp_path)] and warm.stderr == "to stderr\n"
    assert int(ppid) != os.getpid()
    for kw in ({"fresh": True}, {"env": {"TORCH_LOGS": "+dynamo"}}):
        fresh = multiproc.run_python(code, cwd=str(tmp_path), timeout=180, **kw)
        assert fresh.returncode == 3 and int(fresh.stdout.split()[0]) == os.getpid(), kw
    bad = multiproc.run_python(["-c", "import torch\nraise ValueError('boom')"], timeout=180)
    assert bad.returncode == 1 and "ValueError: boom" in bad.stderr
    with pytest.raises(subprocess.TimeoutExpired) as e:
        multiproc.run_python(["-c", "import time; print('started', flush=True); time.sleep(60)"], timeout=5)
    assert "started" in e.value.output
