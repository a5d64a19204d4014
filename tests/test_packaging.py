"""Autoload, idempotent import, and the build/runtime version check (each in a fresh interpreter:
their point is what happens while the interpreter starts and imports torch)."""
import os
import shutil

import npudist
from npudist import _compat


def test_autoload_in_fresh_interpreter(python):
    r = python("""
        import torch
        x = torch.arange(4, device="npu") * 2
        print(x.device, x.cpu().tolist(), torch.npu.device_count(), torch.accelerator.current_accelerator())
    """, fresh=True)  # the point: torch's own autoload at interpreter start
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "npu:0 [0, 2, 4, 6] 8 npu"


def test_explicit_import_without_autoload_is_idempotent(python):
    r = python("""
        import torch
        assert not hasattr(torch, "npu") or torch.npu is None
        import npudist, importlib
        import npudist as again
        npudist._registration.register()
        print(torch.ones(2, device="npu").sum().item())
    """, env={"TORCH_DEVICE_BACKEND_AUTOLOAD": "0"}, fresh=True)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "2.0"


def _package_copy(tmp_path, torch_version):
    pkg = os.path.dirname(npudist.__file__)
    dst = tmp_path / "site" / "npudist"
    shutil.copytree(pkg, dst, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(os.path.join(os.path.dirname(pkg), "npudist_autoload.py"), tmp_path / "site")
    info = (dst / "_build_info.py").read_text().replace(
        f"TORCH_VERSION = {_compat.read_build_info(pkg)['TORCH_VERSION']!r}", f"TORCH_VERSION = {torch_version!r}")
    (dst / "_build_info.py").write_text(info)
    return str(tmp_path / "site")


def test_version_mismatch_names_both_versions_and_the_fix(python, tmp_path):
    site = _package_copy(tmp_path, "2.99.0+cpu")
    r = python("""
        import torch                      # must keep working
        print("torch ok", torch.ones(1).item())
        try:
            import npudist
        except ImportError as e:
            print("ImportError:", e)
    """, env={"PYTHONPATH": site, "TORCH_DEVICE_BACKEND_AUTOLOAD": "0"}, cwd=str(tmp_path), fresh=True)
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert "torch ok 1.0" in out
    assert "built against torch 2.99.0+cpu" in out and "torch 2.13.0" in out
    assert "pip install --no-build-isolation -e" in out
    assert "undefined symbol" not in out + r.stderr


def test_version_mismatch_autoload_warns_instead_of_breaking_import_torch(python, tmp_path):
    site = _package_copy(tmp_path, "2.99.0+cpu")
    r = python("""
        import sys
        sys.path.insert(0, %r)
        import npudist_autoload, warnings
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            npudist_autoload.load()
        print([str(x.message) for x in w])
    """ % site, env={"TORCH_DEVICE_BACKEND_AUTOLOAD": "0", "PYTHONPATH": site}, cwd=str(tmp_path), fresh=True)
    assert r.returncode == 0, r.stderr
    assert "npu device not registered" in r.stdout and "2.99.0+cpu" in r.stdout


def test_missing_extension_message(tmp_path):
    assert "has not been built" in _compat.mismatch_message(None, "2.13.0", str(tmp_path))
