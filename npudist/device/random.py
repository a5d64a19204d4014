"""Seeding hooks torch.manual_seed calls on the device module.

Partial: npu random ops (uniform_, normal_, ...) currently run through the
fallback on PyTorch's CPU generator, which torch.manual_seed seeds already,
so seeding here has nothing else to reach. The npu Philox generator (per
device state, get/set_rng_state) replaces this with the device-API issue.
"""
from __future__ import annotations

import os

from npudist.device import _devices

_forked_after_init = False


def _mark_child() -> None:
    global _forked_after_init
    if _devices.is_initialized():
        _forked_after_init = True


os.register_at_fork(after_in_child=_mark_child)


def _is_in_bad_fork() -> bool:
    """True in a child process forked after npu was initialised in its parent (as torch.cuda's)."""
    return _forked_after_init


def manual_seed(seed: int) -> None:
    """Seeds npu random ops. Partial: they draw from the CPU generator, so this seeds it (torch.manual_seed)."""
    import torch

    torch.random.default_generator.manual_seed(int(seed))


def manual_seed_all(seed: int) -> None:
    """Seeds npu random ops on every device; see manual_seed (one CPU generator serves them all for now)."""
    manual_seed(seed)
