"""What trainers written for Ascend (DeepSpeed, Accelerate, torch_npu's own op examples) find
when they run unchanged on npudist: torch_npu's legacy tensor types, a CANN-shaped
environment, torch_npu.testing and torch_npu.profiler without a stale warning.

Checks that touch process state (environment variables, torch.version) run in a fresh interpreter.
"""
import json
import os
import sys
import warnings

import pytest
import torch

import npudist

CANN_VARS = ("ASCEND_HOME_PATH", "ASCEND_TOOLKIT_HOME", "ASCEND_AICPU_PATH", "NPUDIST_CANN_ENV")


def _ok(r):
    assert r.returncode == 0, f"stdout:\n{r.stdout[-3000:]}\nstderr:\n{r.stderr[-5000:]}"
    return r.stdout


# ------------------------------------------------------------------ legacy tensor types
LEGACY = {"FloatTensor": torch.float32, "DoubleTensor": torch.float64, "HalfTensor": torch.float16,
          "BFloat16Tensor": torch.bfloat16, "ByteTensor": torch.uint8, "CharTensor": torch.int8,
          "ShortTensor": torch.int16, "IntTensor": torch.int32, "LongTensor": torch.int64, "BoolTensor": torch.bool}


@pytest.mark.parametrize("name,dtype", list(LEGACY.items()))
def test_legacy_tensor_types_construct_and_check_npu_tensors(name, dtype):
    import torch_npu

    t = getattr(torch.npu, name)
    assert name in torch.npu.__all__ and t is getattr(torch_npu.npu, name)
    assert t.dtype == dtype and t.layout == torch.strided and t.is_npu and not t.is_sparse and not t.is_cuda
    assert repr(t) == f"<class 'torch.npu.{name}'>"
    x = t([1, 0, 1])  # from data
    assert x.device == torch.device("npu", torch.npu.current_device()) and x.dtype == dtype
    assert x.cpu().tolist() == torch.tensor([1, 0, 1], dtype=dtype).tolist()
    assert t(2, 3).shape == (2, 3) and t(torch.Size([4])).shape == (4,) and t().shape == (0,)  # sizes, empty
    assert isinstance(x, t) and not isinstance(x.cpu(), t)
    assert x.type() == f"torch.npu.{name}"
    other = torch.npu.IntTensor if name != "IntTensor" else torch.npu.LongTensor
    assert not isinstance(x, other)
    y = x.type(other)  # Tensor.type with the type object (torch reads the type's dotted name)
    assert isinstance(y, other) and y.device == x.device


def test_legacy_tensor_types_device_and_errors():
    if torch.npu.device_count() > 1:
        assert torch.npu.FloatTensor([1.0], device="npu:1").device == torch.device("npu", 1)
    with pytest.raises(RuntimeError, match="expects device type npu but device type cpu"):
        torch.npu.FloatTensor([1.0], device="cpu")
    assert torch.npu.FloatTensor.add is torch.Tensor.add  # Tensor's methods on the type, as torch's types have
    with pytest.raises(AttributeError, match="torch.npu.FloatTensor"):
        torch.npu.FloatTensor.no_such_method  # noqa: B018  (the attribute access is what is tested)


# ------------------------------------------------------------------ CANN environment
def _fresh(code, env_extra=None, cwd=None):
    """Runs code as its own process (forked from the warm test zygote: npudist not yet imported)
    with no CANN variables in its environment (plus env_extra), under the harness's environment
    policy (npudist.testing.multiproc.run_python)."""
    import textwrap

    from npudist.testing.multiproc import run_python

    return run_python(["-c", textwrap.dedent(code)], env={**{k: None for k in CANN_VARS}, **(env_extra or {})},
                      timeout=180, cwd=cwd)


def test_import_torch_npu_gives_a_cann_shaped_environment(tmp_path):
    out = _ok(_fresh("""
        import json, os, torch
        before = {k: os.environ.get(k) for k in ("ASCEND_HOME_PATH", "ASCEND_TOOLKIT_HOME")}
        import torch_npu
        home = os.environ["ASCEND_HOME_PATH"]
        print(json.dumps({"before": before, "home": home, "toolkit": os.environ["ASCEND_TOOLKIT_HOME"],
                          "aicpu": os.environ["ASCEND_AICPU_PATH"], "cann": torch.version.cann,
                          "info": open(os.path.join(home, "x86_64-linux", "ascend_toolkit_install.info")).read()}))
    """, cwd=str(tmp_path)))
    r = json.loads(out.strip().splitlines()[-1])
    assert r["before"] == {"ASCEND_HOME_PATH": None, "ASCEND_TOOLKIT_HOME": None}
    assert r["home"] == r["toolkit"] == r["aicpu"] and r["home"].endswith(os.path.join("npudist", "cann_home"))
    assert r["cann"] == "8.3.RC1" and "version=8.3.RC1" in r["info"] and "not CANN" in r["info"]


def test_a_cann_environment_the_user_set_wins(tmp_path):
    home = tmp_path / "Ascend" / "latest" / "aarch64-linux"
    home.mkdir(parents=True)
    (home / "ascend_toolkit_install.info").write_text("package_name=Ascend-cann-toolkit\nversion=8.0.0\n")
    code = """
        import os, torch, torch_npu
        print(os.environ.get("ASCEND_HOME_PATH"), os.environ.get("ASCEND_TOOLKIT_HOME"), torch.version.cann)
    """
    out = _ok(_fresh(code, {"ASCEND_HOME_PATH": str(tmp_path / "Ascend" / "latest")}, cwd=str(tmp_path)))
    assert out.split() == [str(tmp_path / "Ascend" / "latest"), os.path.join(npudist.__path__[0], "cann_home"),
                           "8.0.0"]
    out = _ok(_fresh(code, {"NPUDIST_CANN_ENV": "0"}, cwd=str(tmp_path)))
    assert out.split() == ["None", "None", "not", "known"]


def test_npurun_gives_ranks_the_cann_environment(tmp_path):
    from npudist import _cann
    from npurun import env as npuenv

    saved = {k: os.environ.pop(k) for k in CANN_VARS if k in os.environ}
    try:
        got = npuenv.launcher_env("tag")
        assert {k: got[k] for k in _cann.VARIABLES} == _cann.environment()
        os.environ["ASCEND_HOME_PATH"] = str(tmp_path)  # a value the user set stays
        got = npuenv.launcher_env("tag")
        assert "ASCEND_HOME_PATH" not in got and got["ASCEND_TOOLKIT_HOME"] == _cann.HOME
    finally:
        for k in CANN_VARS:
            os.environ.pop(k, None)
        os.environ.update(saved)


# ------------------------------------------------------------------ torch_npu.testing
DOC_EXAMPLE = '''
import numpy as np
import torch
import torch_npu
from torch_npu.testing.common_utils import SupportedDevices  # noqa: F401  (imported as the op docs do)
from torch_npu.testing.testcase import TestCase, run_tests


class FusionAttentionModes(TestCase):
    """The sparse modes 0-4 of torch_npu's npu_fusion_attention documentation, each against a
    softmax reference with the mask the documentation draws for it."""

    def reference(self, q, k, v, mask, scale):
        s = torch.matmul(q, k.transpose(2, 3)) * scale + mask * -10000.0
        return torch.matmul(torch.softmax(s, dim=-1), v)

    def documented(self, mode, pre, nxt, shape):
        if mode in (0, 4):
            return np.triu(np.ones(shape), k=nxt + 1) + np.tril(np.ones(shape), k=-pre - 1)
        if mode == 1:
            return np.zeros(shape)
        return np.triu(np.ones(shape), k=1)

    def test_modes(self):
        shape = (1, 8, 256, 256)
        q, k, v = (torch.randn(*shape, dtype=torch.float16) for _ in range(3))
        for mode, pre, nxt in [(0, 128, 128), (1, 65536, 65536), (2, 65536, 0), (3, 65536, 0), (4, 128, 128)]:
            if mode == 0:
                m = torch.ones(shape, dtype=torch.bool, device="npu")
                given = torch.triu(m, diagonal=nxt + 1) | torch.tril(m, diagonal=-pre - 1)
            elif mode == 1:
                given = None
            else:
                given = torch.triu(torch.ones(2048, 2048, dtype=torch.bool, device="npu"), diagonal=1)
            want = self.reference(q.float(), k.float(), v.float(),
                                  torch.tensor(self.documented(mode, pre, nxt, shape)).float(), 0.08838)
            got = torch_npu.npu_fusion_attention(q.npu(), k.npu(), v.npu(), head_num=8, input_layout="BNSD",
                                                 scale=0.08838, sparse_mode=mode, atten_mask=given,
                                                 pre_tockens=pre, next_tockens=nxt)
            self.assertRtolEqual(want.half(), got[0], prec=0.01, prec16=0.01)

    def test_rtol_rule_fails_on_a_wrong_result(self):
        x = torch.ones(1000)
        with self.assertRaisesRegex(AssertionError, "result error"):
            self.assertRtolEqual(x, x + 0.1)
        self.assertRtolEqual(x, x + 1e-6)
        with self.assertRaisesRegex(AssertionError, "shape error"):
            self.assertRtolEqual(x, torch.ones(999))
        with self.assertRaisesRegex(AssertionError, "dtype error"):
            self.assertRtolEqual(x, x.double())
        with self.assertRaisesRegex(AssertionError, "bfloat16"):
            self.assertRtolEqual(x.bfloat16(), x.bfloat16())
        self.assertRtolEqual([x, x.half()], [x + 1e-6, x.half()])


if __name__ == "__main__":
    run_tests()
'''


def test_the_op_documentation_example_runs_on_torch_npu_testing(tmp_path):
    import subprocess

    script = tmp_path / "test_doc_example.py"
    script.write_text(DOC_EXAMPLE)
    r = subprocess.run([sys.executable, str(script), "-v"], capture_output=True, text=True, timeout=300,
                       cwd=str(tmp_path))
    assert r.returncode == 0, r.stderr[-5000:]
    assert "Ran 2 tests" in r.stderr and "OK" in r.stderr, r.stderr[-3000:]


def test_supported_devices_skips_other_socs():
    import unittest

    from torch_npu.testing.common_utils import SupportedDevices

    name = torch.npu.get_device_name()
    assert SupportedDevices([name[:4]])(lambda: "ran")() == "ran"
    with pytest.raises(unittest.SkipTest, match="runs on"):
        SupportedDevices(["NoSuchSoC"])(lambda: "ran")()


# ------------------------------------------------------------------ torch_npu.profiler
def test_torch_npu_profiler_records_npu_events_without_a_stale_warning():
    import torch_npu

    acts = [torch_npu.profiler.ProfilerActivity.CPU, torch_npu.profiler.ProfilerActivity.NPU]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with torch_npu.profiler.profile(activities=acts) as prof:
            (torch.ones(64, device="npu") * 2).sum().cpu()
    assert not [w for w in caught if "not recorded" in str(w.message)], [str(w.message) for w in caught]
    kernels = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.PrivateUse1]
    assert any(e.name.startswith("aten::mul") for e in kernels), [e.name for e in kernels]
