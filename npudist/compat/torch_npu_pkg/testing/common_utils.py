"""``torch_npu.testing.common_utils``: ``SupportedDevices`` (partial: torch_npu's other helpers are absent)."""
from __future__ import annotations

import functools
import unittest

import torch

__all__ = ["SupportedDevices"]


def SupportedDevices(devices):  # noqa: N802  (torch_npu's name for this decorator)
    """Runs the decorated test only on the listed SoCs (e.g. ``["Ascend910B"]``), else skips it.

    The SoC is ``torch.npu.get_device_name()``; a listed name matches when the device name starts
    with it, as torch_npu's decorator matches SoC families.
    """
    if isinstance(devices, str):
        devices = [devices]

    def decorator(fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            name = torch.npu.get_device_name()
            if not any(name.startswith(d) for d in devices):
                raise unittest.SkipTest(f"runs on {list(devices)} only; this device is {name}")
            return fn(*args, **kwargs)

        return wrapper

    return decorator
