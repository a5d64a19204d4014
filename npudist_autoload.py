"""Entry point in the ``torch.backends`` group: makes ``npu`` usable after ``import torch``.

PyTorch calls :func:`load` at the end of ``import torch`` (unless
``TORCH_DEVICE_BACKEND_AUTOLOAD=0``). An exception here would break
``import torch`` itself, so a build that does not fit the running torch only
warns here; ``import npudist`` then raises the full error.
"""
import importlib.util
import os
import warnings


def load():
    spec = importlib.util.find_spec("npudist")
    if spec is None or not spec.submodule_search_locations:
        return
    package_dir = list(spec.submodule_search_locations)[0]
    compat_spec = importlib.util.spec_from_file_location("_npudist_compat", os.path.join(package_dir, "_compat.py"))
    compat = importlib.util.module_from_spec(compat_spec)
    compat_spec.loader.exec_module(compat)

    import torch

    message = compat.mismatch_message(compat.read_build_info(package_dir), torch.__version__, package_dir)
    if message:
        warnings.warn(f"npu device not registered: {message}", RuntimeWarning, stacklevel=2)
        return
    try:
        import npudist  # noqa: F401  (registers the npu device)
    except Exception as err:  # never break `import torch` itself
        warnings.warn(
            f"npu device not registered: importing npudist failed ({type(err).__name__}: {err}). "
            "`import npudist` shows the full error; TORCH_DEVICE_BACKEND_AUTOLOAD=0 disables this autoload.",
            RuntimeWarning,
            stacklevel=2,
        )
