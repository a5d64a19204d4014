"""One rule for environment variables: npudist/_env.py and its C++ mirror
csrc/util/env.{h,cpp} parse alike, a bad value is an error naming the variable, the value and
what is allowed, every reader goes through them, and docs/env_vars.md lists exactly the
variables the code reads."""
import os
import re

import pytest

from npudist import _C, _env

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VAR = "NPUDIST_TEST_ENV_VALUE"


@pytest.fixture
def setenv(monkeypatch):
    def set_(value):
        if value is None:
            monkeypatch.delenv(VAR, raising=False)
        else:
            monkeypatch.setenv(VAR, value)  # putenv too: the C++ reader sees it
    return set_


BOOLS = [(None, "default"), ("", "default"), ("1", True), ("0", False), ("true", True), ("FALSE", False),
         ("Yes", True), ("no", False), (" on ", True), ("off", False), ("2", "error"), ("enable", "error"),
         ("tru", "error")]


@pytest.mark.parametrize("value,want", BOOLS)
def test_bool_python_and_cpp_agree(setenv, value, want):
    setenv(value)
    for read in (lambda d: _env.get_bool(VAR, d), lambda d: _C._env_bool(VAR, d)):
        if want == "error":
            with pytest.raises(ValueError) as e:
                read(True)
            msg = str(e.value)
            assert VAR in msg and repr(value)[1:-1] in msg and "true, false" in msg, msg
        elif want == "default":
            assert read(True) is True and read(False) is False
        else:
            assert read(not want) is want


INTS = [(None, 7), ("12", 12), (" -3 ", -3), ("0", 0), ("100", 100), ("101", "error"), ("-11", "error"),
        ("1.5", "error"), ("ten", "error"), ("0x10", "error"), ("99999999999999999999999", "error")]


@pytest.mark.parametrize("value,want", INTS)
def test_int_python_and_cpp_agree(setenv, value, want):
    setenv(value)
    for read in (lambda: _env.get_int(VAR, 7, -10, 100), lambda: _C._env_int(VAR, 7, -10, 100)):
        if want == "error":
            with pytest.raises(ValueError, match=rf"{VAR}='.*' is not valid: expected an integer from -10 to 100"):
                read()
        else:
            assert read() == want


FLOATS = [(None, 0.5), ("2.5", 2.5), ("1e1", 10.0), ("-1", "error"), ("nan", "error"), ("inf", "error"),
          ("x", "error"), ("11", "error")]


@pytest.mark.parametrize("value,want", FLOATS)
def test_float_python_and_cpp_agree(setenv, value, want):
    setenv(value)
    for read in (lambda: _env.get_float(VAR, 0.5, 0.0, 10.0), lambda: _C._env_float(VAR, 0.5, 0.0, 10.0)):
        if want == "error":
            with pytest.raises(ValueError, match=rf"{VAR}='.*' is not valid: expected a number from 0"):
                read()
        else:
            assert read() == pytest.approx(want)


@pytest.mark.parametrize("value,want", [(None, "off"), ("cpu", "cpu"), ("float32", "float32"), ("CPU", "error"),
                                        ("fast", "error")])
def test_choice_python_and_cpp_agree(setenv, value, want):
    setenv(value)
    allowed = ["off", "float32", "cpu"]
    for read in (lambda: _env.get_choice(VAR, "off", allowed), lambda: _C._env_choice(VAR, "off", allowed)):
        if want == "error":
            with pytest.raises(ValueError, match=rf"{VAR}='{value}' is not valid: expected one of off, float32, cpu"):
                read()
        else:
            assert read() == want


@pytest.mark.parametrize("name, value, message", [
    ("NPUDIST_HCCL_SPIN_US", "fast", "NPUDIST_HCCL_SPIN_US='fast' is not valid: expected an integer from 0 to 1000000"),
    ("TORCH_HCCL_ENABLE_MONITORING", "maybe",
     "TORCH_HCCL_ENABLE_MONITORING='maybe' is not valid: expected one of 1, 0, true, false"),
])
def test_bad_values_of_real_variables_raise_naming_them(python, name, value, message):
    """Variables that used to be ignored with a warning (NPUDIST_HCCL_SPIN_US), or read as true
    whatever they held (TORCH_HCCL_ENABLE_MONITORING=maybe), now fail group creation."""
    r = python("""
        import os, torch, torch.distributed as dist, npudist
        from npudist.testing.multiproc import free_port
        os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(free_port()))
        try:
            dist.init_process_group("hccl", rank=0, world_size=1)
            print("no error")
        except Exception as e:
            print(type(e).__name__, e)
    """, env={name: value})
    assert message in r.stdout, r.stdout + r.stderr


# ---------------------------------------------------------------- docs vs code

PREFIXES = ("NPUDIST_", "HCCL_", "TORCH_HCCL_", "ASCEND_", "PYTORCH_NPU_", "OOM_SNAPSHOT_")
NAME = re.compile(r"""["']((?:%s)[A-Z0-9][A-Z0-9_]*)["']""" % "|".join(PREFIXES))
# Sources whose variables users set. Tests and the test harness are not among them.
SCANNED = ["csrc", "npudist", "launcher", "npudist_torch_npu_finder.py", "npudist_autoload.py", "setup.py"]
EXCLUDED_DIRS = {os.path.join("npudist", "testing", "multiproc.py"), os.path.join("npudist", "testing", "npurun.py")}


def _sources():
    for entry in SCANNED:
        path = os.path.join(REPO, entry)
        if os.path.isfile(path):
            yield entry, path
            continue
        for root, _, files in os.walk(path):
            for f in files:
                if f.endswith((".py", ".cpp", ".h")):
                    full = os.path.join(root, f)
                    rel = os.path.relpath(full, REPO)
                    if rel not in EXCLUDED_DIRS:
                        yield rel, full


# run.sh reads its variables as shell words (${NPUDIST_VENV:-.venv}).
SHELL_NAME = re.compile(r"\$\{?((?:%s)[A-Z0-9][A-Z0-9_]*)" % "|".join(PREFIXES))


def _names_in_code():
    found = {}
    for rel, full in _sources():
        with open(full, errors="replace") as f:
            for name in NAME.findall(f.read()):
                found.setdefault(name, rel)
    with open(os.path.join(REPO, "run.sh")) as f:
        for name in SHELL_NAME.findall(f.read()):
            found.setdefault(name, "run.sh")
    return found


def _names_in_docs():
    with open(os.path.join(REPO, "docs", "env_vars.md")) as f:
        text = f.read()
    return set(re.findall(r"`((?:%s)[A-Z0-9][A-Z0-9_]*)`" % "|".join(PREFIXES), text))


def test_docs_list_every_variable_the_code_reads():
    code, docs = _names_in_code(), _names_in_docs()
    missing = {n: where for n, where in code.items() if n not in docs}
    assert not missing, f"read in the code but not in docs/env_vars.md: {missing}"
    # the test harness's own knobs (NPUDIST_TEST_ZYGOTE) are documented too, though not scanned above
    harness = set()
    for rel in EXCLUDED_DIRS:
        with open(os.path.join(REPO, rel)) as f:
            harness.update(NAME.findall(f.read()))
    stale = docs - set(code) - harness
    assert not stale, f"in docs/env_vars.md but read nowhere in {SCANNED}: {sorted(stale)}"


RAW_READ = {
    ".py": re.compile(r"os\.environ\.get\(|os\.getenv\(|os\.environ\[[^\]]+\](?!\s*=)"),
    ".cpp": re.compile(r"\bgetenv\("), ".h": re.compile(r"\bgetenv\("),
}
# The readers themselves, and code that copies or builds whole environments (not one variable's value).
RAW_ALLOWED = {os.path.join("csrc", "util", "env.cpp"), os.path.join("npudist", "_env.py"),
               os.path.join("launcher", "npurun", "plan.py")}


def test_every_reader_goes_through_the_one_reader():
    offenders = []
    for rel, full in _sources():
        if rel in RAW_ALLOWED or rel.startswith(os.path.join("npudist", "testing")):
            continue
        pattern = RAW_READ.get(os.path.splitext(rel)[1])
        with open(full, errors="replace") as f:
            for i, line in enumerate(f, 1):
                if pattern and pattern.search(line) and not line.lstrip().startswith(("#", "//")):
                    offenders.append(f"{rel}:{i}: {line.strip()}")
    assert not offenders, "read environment variables with npudist/_env.py or csrc/util/env.h:\n" + "\n".join(offenders)
