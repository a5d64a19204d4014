"""npudist.profiler.step's step ranges and npurun's --profile / --profile-steps validation."""
import os

import pytest

from npudist.profiler.steps import parse_steps


def test_parse_steps():
    assert parse_steps("1:4") == (1, 4)
    assert parse_steps("3:5") == (3, 5)
    for bad, msg in [("0:3", "A must be >= 1"), ("4:4", "greater than A"), ("2", "use A:B"),
                     ("a:b", "use A:B"), ("1:2:3", "use A:B")]:
        with pytest.raises(ValueError, match=msg):
            parse_steps(bad)


def _validate(argv):
    from npurun.args import build_parser, validate
    args = build_parser().parse_args(argv + ["job.py"])
    validate(args)
    return args


def test_npurun_profile_flags(tmp_path, monkeypatch):
    script = tmp_path / "job.py"
    script.write_text("")
    monkeypatch.chdir(tmp_path)  # restored after the test: later tests rely on the repository as cwd
    args = _validate(["--nproc", "2", "--profile", str(tmp_path / "prof"), "--profile-steps", "2:4"])
    assert args.profile_dir == str(tmp_path / "prof") and args.profile_steps == "2:4"
    from npurun.args import UsageError
    with pytest.raises(UsageError, match="--profile-steps needs --profile"):
        _validate(["--profile-steps", "2:4"])
    with pytest.raises(UsageError, match="--profile-steps: .*A must be >= 1"):
        _validate(["--profile", str(tmp_path / "p"), "--profile-steps", "0:2"])
    (tmp_path / "afile").write_text("x")
    with pytest.raises(UsageError, match="is a file"):
        _validate(["--profile", str(tmp_path / "afile")])
    ro = tmp_path / "ro"
    ro.mkdir()
    os.chmod(ro, 0o500)
    try:
        if not os.access(ro, os.W_OK):  # root writes anywhere
            with pytest.raises(UsageError, match="not writable"):
                _validate(["--profile", str(ro / "out")])
    finally:
        os.chmod(ro, 0o700)


def test_launcher_env_passes_profile_settings(tmp_path):
    from npurun.env import launcher_env
    env = launcher_env("tag", "rel/prof", "2:5")
    assert env["NPUDIST_PROFILE_DIR"] == os.path.abspath("rel/prof")
    assert env["NPUDIST_PROFILE_STEPS"] == "2:5"
    assert "NPUDIST_PROFILE_DIR" not in launcher_env("tag")
