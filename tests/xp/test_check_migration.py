"""The migration checker finds unsupported APIs and dtypes in NumPy / CuPy code."""
import json
import subprocess
import sys

from npudist.xp.check_migration import check_source, main

SRC = '''
import numpy as np
import cupy as cp
from numpy import linalg as LA, ma
from numpy.fft import rfft

a = np.zeros(3, dtype=np.longdouble)
b = np.asarray(a).astype("U8")
c = np.quantile(a, 0.5)
d = np.ma.masked_array(a)
k = cp.RawKernel("extern C __global__ void f() {}", "f")
e = LA.inv(np.eye(2)) + np.linalg.lstsq(a, a)[0]
f = np.zeros(2, dtype="float32") + np.sum(a) + rfft(a)
g = cp.asnumpy(cp.arange(3))
h = np.char.upper(["a"])
'''


def _kinds(findings):
    return [(f["line"], f["kind"], f["api"]) for f in findings]


def test_findings():
    got = _kinds(check_source(SRC, "x.py"))
    assert (4, "unsupported-api", "numpy.ma") in got
    assert (7, "unsupported-dtype", "numpy.longdouble") in got
    assert (8, "unsupported-dtype", "'U8'") in got
    assert not any(api.endswith("uint32") for _, _, api in check_source("import numpy as np\nnp.uint32", "u.py"))
    assert (9, "partial", "numpy.quantile") in got
    assert (10, "unsupported-api", "numpy.ma.masked_array") in got
    assert (11, "unsupported-api", "cupy.RawKernel") in got
    assert not check_source("import cupy as cp\ncp.ElementwiseKernel\ncp.fuse\ncp.get_default_memory_pool", "k.py")
    assert (15, "unsupported-api", "numpy.char.upper") in got
    # supported calls are not reported
    lines = {line for line, _, _ in got}
    assert 12 not in lines and 14 not in lines
    assert not any(api == "numpy.zeros" for _, _, api in got)


def test_cli_exit_codes_and_json(tmp_path, capsys):
    bad = tmp_path / "bad.py"
    bad.write_text(SRC)
    good = tmp_path / "good.py"
    good.write_text("import numpy as np\nx = np.arange(3).sum()\n")
    assert main([str(good)]) == 0
    assert "nothing to report" in capsys.readouterr().out
    assert main([str(tmp_path), "--json"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert {d["file"] for d in data} == {str(bad)}
    assert main([str(tmp_path / "missing.py")]) == 2
    r = subprocess.run([sys.executable, "-m", "npudist.xp.check_migration", str(bad)], capture_output=True, text=True)
    assert r.returncode == 1 and "bad.py:7:" in r.stdout and "unsupported-dtype" in r.stdout


def test_syntax_error_is_reported():
    assert check_source("def (:", "broken.py")[0]["kind"] == "syntax-error"
