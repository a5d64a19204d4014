"""Bad arguments are clear errors before anything starts; --dry-run prints the plan; units."""
import signal

import pytest
import torch
from torch.distributed.elastic.multiprocessing import Std

import npudist  # noqa: F401  (registers npu when torch's backend autoload is off)
from npurun import cli, output
from npurun import env as npuenv

from . import JOB, run_npurun

VISIBLE = torch.npu.device_count()


def _error(capsys, argv, monkeypatch=None):
    with pytest.raises(SystemExit) as e:
        cli.main(argv)
    assert e.value.code == 2
    return capsys.readouterr().err


@pytest.mark.parametrize("argv,message", [
    (["--nproc", "0", JOB], "need at least 1 rank"),
    (["--nproc", "abc", JOB], "--nproc-per-node='abc' is not valid"),
    (["--nproc", str(VISIBLE + 1), JOB], f"only {VISIBLE} npu(s) are visible"),
    (["--nproc-per-node", "gpu", JOB], "npurun starts ranks on npus"),
    (["--nnodes", "0", JOB], "need 0 < MIN <= MAX"),
    (["--nnodes", "a:b", JOB], "is not a node count"),
    (["--nnodes", "3:2", "--rdzv-backend", "c10d", "--rdzv-endpoint", "h:1", JOB], "need 0 < MIN <= MAX"),
    (["--max-restarts", "-1", JOB], "--max-restarts=-1: must be >= 0"),
    (["--standalone", "--nnodes", "2", JOB], "--standalone starts a single-node job"),
    (["--nnodes", "2", "--rdzv-backend", "c10d", JOB], "needs --rdzv-endpoint HOST:PORT"),
    (["--nnodes", "1:2", JOB], "elastic --nnodes MIN:MAX needs a dynamic rendezvous"),
    (["--rdzv-backend", "c10d", "--rdzv-endpoint", "host:99999", JOB], "--rdzv-endpoint='host:99999'"),
    (["--rdzv-backend", "zookeeper", JOB], "--rdzv-backend='zookeeper'"),
    (["--nnodes", "2", "--node-rank", "2", "--master-port", "1234", JOB], "--node-rank=2: must be in 0..1"),
    (["--master-port", "70000", JOB], "--master-port=70000"),
    (["--nproc", "2", "--redirects", "7", JOB], "--redirects='7' is not valid"),
    (["--nproc", "2", "--tee", "5:3", JOB], "names local rank(s) [5]"),
    (["--nproc", "2", "--local-ranks-filter", "0,4", JOB], "--local-ranks-filter='0,4' names local rank(s) [4]"),
    (["--nproc", "2", "--local-ranks-filter", "x", JOB], "comma-separated list of local ranks"),
    (["--rdzv-conf", "novalue", JOB], "is not KEY=VALUE"),
    (["--monitor-interval", "0", JOB], "--monitor-interval=0.0: must be > 0"),
    (["--shutdown-timeout", "-1", JOB], "--shutdown-timeout=-1"),
    (["--rdzv-connect-timeout", "0", JOB], "--rdzv-connect-timeout=0.0"),
    (["--logs-specs", "x", JOB], "--logs-specs is not supported"),
    (["--numa-binding", "node", JOB], "--numa-binding binds ranks"),
    (["--virtual-local-rank", JOB], "--virtual-local-rank narrows CUDA_VISIBLE_DEVICES"),
    (["missing_script.py"], "training script 'missing_script.py' not found"),
    (["train"], "(to run a module, add -m)"),
    (["-m", "--no-python", "x"], "-m/--module and --no-python cannot be used together"),
    (["--no-python", "no-such-program-xyz"], "was not found on PATH"),
])
def test_bad_arguments_are_clear_errors(capsys, argv, message):
    err = _error(capsys, argv)
    assert message in err, err
    assert err.startswith("usage: npurun")


def test_bad_environment_is_a_clear_error(capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("NPUDIST_JOB_TAG", "bad-tag")
    assert "NPUDIST_JOB_TAG='bad-tag' is not a valid job tag" in _error(capsys, [JOB])
    monkeypatch.delenv("NPUDIST_JOB_TAG")
    log_file = tmp_path / "file"
    log_file.write_text("")
    assert "is a file, not a directory" in _error(capsys, ["--log-dir", str(log_file), JOB])


@pytest.mark.timeout(120)
def test_too_many_ranks_from_the_console_script_starts_nothing(tmp_path):
    marker = tmp_path / "started"
    script = tmp_path / "w.py"
    script.write_text(f"open({str(marker)!r}, 'w')\n")
    r = run_npurun(["--nproc", "3", str(script)], env={"ASCEND_RT_VISIBLE_DEVICES": "4,6"})
    assert r.returncode == 2
    assert "--nproc-per-node 3 asks for 3 local ranks but only 2 npu(s) are visible" in r.stderr
    assert "ASCEND_RT_VISIBLE_DEVICES=4,6" in r.stderr
    assert not marker.exists()
    r = run_npurun(["--nproc", "1", str(script)], env={"NPUDIST_DEVICE_COUNT": "zero"})
    assert r.returncode == 2 and "NPUDIST_DEVICE_COUNT" in r.stderr and not marker.exists()


@pytest.mark.timeout(120)
def test_dry_run_prints_the_plan_and_starts_nothing(tmp_path):
    marker = tmp_path / "started"
    script = tmp_path / "w.py"
    script.write_text(f"open({str(marker)!r}, 'w')\n")
    r = run_npurun(["--nproc", "npu", "--dry-run", "--max-restarts", "2", str(script), "--lr", "0.1"],
                   env={"ASCEND_RT_VISIBLE_DEVICES": "6,2,4", "OMP_NUM_THREADS": "3", "NPUDIST_JOB_TAG": "abc123"})
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert "dry run: nothing was started" in out and not marker.exists()
    assert "ranks per node   : 3  world size 3" in out
    for i, phys in enumerate(["6", "2", "4"]):
        assert f"local rank {i}: rank {i}, device npu:{i} (physical {phys}), OMP_NUM_THREADS=3" in out
    assert f"-u {script} --lr 0.1" in out
    assert "NPUDIST_JOB_TAG=abc123" in out and "/dev/shm/npudist-abc123-*" in out
    assert "max restarts     : 2" in out and "ASCEND_RT_VISIBLE_DEVICES=6,2,4 (inherited)" in out


def test_dry_run_auto_and_multinode_plan(capsys):
    assert cli.main(["--nproc-per-node", "auto", "--dry-run", JOB]) == 0
    out = capsys.readouterr().out
    assert f"ranks per node   : {VISIBLE}" in out
    assert cli.main(["--nnodes", "2", "--nproc", "2", "--rdzv-backend", "c10d", "--rdzv-endpoint", "10.0.0.1:29400",
                     "--dry-run", JOB]) == 0
    out = capsys.readouterr().out
    assert "local rank 1: rank (rendezvous), device npu:1" in out and "c10d at 10.0.0.1:29400" in out
    assert "world size 4" in out
    assert cli.main(["--nnodes", "2", "--node-rank", "1", "--nproc", "2", "--master-port", "1234", "--dry-run",
                     JOB]) == 0
    out = capsys.readouterr().out
    assert "local rank 1: rank 3, device npu:1" in out and "static at 127.0.0.1:1234" in out


def test_threads_divide_the_cores():
    assert npuenv.threads_per_rank(4, cores=8) == [2, 2, 2, 2]
    assert npuenv.threads_per_rank(3, cores=8) == [3, 3, 2]
    assert npuenv.threads_per_rank(4, cores=2) == [1, 1, 1, 1]
    assert npuenv.threads_per_rank(1, cores=6) == [6]


def test_console_streams_follow_torchrun_redirects_and_tee():
    all3 = dict.fromkeys(range(2), Std.ALL)
    none = dict.fromkeys(range(2), Std.NONE)
    assert output.console_streams(none, none) == all3
    assert output.console_streams({0: Std.ALL, 1: Std.OUT}, none) == {0: Std.NONE, 1: Std.ERR}
    assert output.console_streams(all3, {0: Std.OUT, 1: Std.NONE}) == {0: Std.OUT, 1: Std.NONE}


def test_first_error_line(tmp_path):
    log = tmp_path / "stderr.log"
    log.write_text("warming up\nTraceback (most recent call last):\n  File \"x.py\", line 1\n    f()\n"
                   "KeyError: 'a'\n\nDuring handling of the above exception, another exception occurred:\n\n"
                   "Traceback (most recent call last):\n  File \"x.py\", line 3\n    g()\n    ^^^\n"
                   "RuntimeError: hccl: peer rank 2 is gone\n  extra detail\n")
    assert output.first_error_line(str(log)) == "RuntimeError: hccl: peer rank 2 is gone"
    log.write_text("[rank3]: Traceback (most recent call last):\n[rank3]:   File \"x.py\", line 1\n"
                   "[rank3]: ValueError: node1 boom\n")
    assert output.first_error_line(str(log)) == "ValueError: node1 boom"
    log.write_text("step 1\nfatal: disk full\nbye\n")
    assert output.first_error_line(str(log)) == "fatal: disk full"
    assert output.first_error_line(str(tmp_path / "none")) is None


def test_exit_codes_of_outcomes():
    fail = output.Outcome("failed", 1.0, 2, failures=[output.RankFailure(1, 1, 9, -signal.SIGKILL)])
    assert fail.exit_code() == 137
    assert output.Outcome("interrupted", 1.0, 2, signal_name="SIGINT").exit_code() == 130
    assert output.Outcome("ok", 1.0, 2).exit_code() == 0
    assert output.Outcome("error", 1.0, 2, message="x").exit_code() == 1
    assert "rank 1 failed first (killed by SIGKILL)" in output.summary(fail)


def test_launcher_env_fresh_store_per_round_and_nnodes(monkeypatch):
    from npurun import env as npuenv

    monkeypatch.delenv("TORCH_DISABLE_SHARE_RDZV_TCP_STORE", raising=False)
    got = npuenv.launcher_env("tag", nnodes="1:2")
    assert got["TORCH_DISABLE_SHARE_RDZV_TCP_STORE"] == "1" and got["NPUDIST_NNODES"] == "1:2"
    monkeypatch.setenv("TORCH_DISABLE_SHARE_RDZV_TCP_STORE", "0")  # the user's choice stays
    assert "TORCH_DISABLE_SHARE_RDZV_TCP_STORE" not in npuenv.launcher_env("tag")
