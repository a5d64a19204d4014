"""``torch.npu.amp`` (torch_npu.npu.amp's names): autocast, GradScaler, custom_fwd, custom_bwd.

Thin forms of torch.amp with device_type "npu", as torch.cuda.amp is of torch.amp
with "cuda"; the autocast policy is PyTorch's own (docs/device_api.md).
"""
from __future__ import annotations

import functools

import torch

__all__ = ["autocast", "GradScaler", "custom_fwd", "custom_bwd"]


class autocast(torch.amp.autocast):
    """``torch.autocast("npu", ...)``; default dtype float16 (as torch_npu.npu.amp.autocast)."""

    def __init__(self, enabled: bool = True, dtype: torch.dtype = torch.float16, cache_enabled: bool = True):
        super().__init__("npu", enabled=enabled, dtype=dtype, cache_enabled=cache_enabled)


class GradScaler(torch.amp.GradScaler):
    """``torch.amp.GradScaler("npu", ...)`` with torch.cuda.amp.GradScaler's arguments."""

    def __init__(self, init_scale: float = 2.0**16, growth_factor: float = 2.0, backoff_factor: float = 0.5,
                 growth_interval: int = 2000, enabled: bool = True, **kwargs):
        kwargs.pop("dynamic", None)  # torch_npu's extra flag: scaling is always dynamic here
        super().__init__("npu", init_scale=init_scale, growth_factor=growth_factor, backoff_factor=backoff_factor,
                         growth_interval=growth_interval, enabled=enabled)


custom_fwd = functools.partial(torch.amp.custom_fwd, device_type="npu")
custom_bwd = functools.partial(torch.amp.custom_bwd, device_type="npu")
