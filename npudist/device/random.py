"""npu random number generation, with torch.cuda's API.

Each npu has a default ``torch.Generator`` whose state is Philox-shaped, as
CUDA's: 16 bytes, a uint64 seed then an int64 offset (DTensor's RNG tracker
reads and writes it). Random ops on npu (uniform_, normal_, bernoulli_,
random_, exponential_, randperm, multinomial, dropout, ...) draw from the
generator of their device; see csrc/core/generator.h for how numbers are made.
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import torch

from npudist import _C
from npudist.device import _devices
from npudist.device._lazy import _is_in_bad_fork, _lazy_call, is_initialized  # noqa: F401  (torch.npu._is_in_bad_fork)

_default_generators: dict[int, torch.Generator] = {}



def default_generator(device: Any = None) -> torch.Generator:
    """The default ``torch.Generator`` of an npu (default: current)."""
    _devices.init()
    idx = _devices._index(device)
    gen = _default_generators.get(idx)
    if gen is None:
        gen = _default_generators[idx] = _C._default_generator(idx)
    return gen


class _DefaultGenerators:
    """``torch.npu.default_generators[i]``: the default generator of npu i (as torch.cuda's tuple)."""

    def __getitem__(self, i: int) -> torch.Generator:
        if not isinstance(i, int) or not 0 <= i < len(self):
            raise IndexError(f"npu index {i} out of range of the {len(self)} visible npus")
        return default_generator(i)

    def __len__(self) -> int:
        return _devices.device_count()

    def __iter__(self):
        return (default_generator(i) for i in range(len(self)))


default_generators = _DefaultGenerators()


def get_rng_state(device: Any = "npu") -> torch.Tensor:
    """The generator state of an npu as a torch.uint8 cpu tensor of 16 bytes (seed, offset)."""
    return default_generator(device).get_state()


def get_rng_state_all() -> list[torch.Tensor]:
    """get_rng_state of every visible npu."""
    return [get_rng_state(i) for i in range(_devices.device_count())]


def set_rng_state(new_state: torch.Tensor, device: Any = "npu") -> None:
    """Restores an npu's generator state from get_rng_state.

    Before npu is initialised the state is copied and applied at initialisation
    (torch.cuda.set_rng_state does not initialise either).

    Raises:
        TypeError: the state is not a torch.uint8 (ByteTensor) cpu tensor.
        RuntimeError: it is not 16 bytes, or its offset is negative.
    """
    if not isinstance(new_state, torch.Tensor) or new_state.dtype != torch.uint8:
        raise TypeError(f"RNG state must be a torch.ByteTensor (uint8) from torch.npu.get_rng_state, got "
                        f"{getattr(new_state, 'dtype', type(new_state).__name__)}")
    if new_state.device.type != "cpu":
        raise TypeError(f"RNG state must be a cpu tensor, got one on {new_state.device}")
    state = new_state.detach().contiguous()
    if not is_initialized():
        state = state.clone()
    _lazy_call(lambda: default_generator(device).set_state(state))


def set_rng_state_all(new_states: Iterable[torch.Tensor]) -> None:
    """set_rng_state for npu 0, 1, ... from a sequence of states."""
    for i, state in enumerate(new_states):
        set_rng_state(state, i)


# Seeding does not initialise npu: as torch.cuda's, it is queued until the first
# use (torch.manual_seed calls manual_seed_all, and a script may seed before it
# picks its device; DeviceMesh relies on is_initialized() staying False then).


def manual_seed(seed: int) -> None:
    """Seeds the current npu's generator (offset reset to 0); deferred until npu is initialised."""
    seed = int(seed)
    _lazy_call(lambda: default_generator().manual_seed(seed), seed=True)


def manual_seed_all(seed: int) -> None:
    """Seeds every visible npu's generator (torch.manual_seed calls this); deferred until npu is initialised."""
    seed = int(seed)

    def cb():
        for i in range(_devices.device_count()):
            default_generator(i).manual_seed(seed)

    _lazy_call(cb, seed_all=True)


def seed() -> None:
    """Seeds the current npu's generator with a non-deterministic random number (deferred until init)."""
    _lazy_call(lambda: default_generator().seed())


def seed_all() -> None:
    """Seeds every npu's generator with one non-deterministic random number (deferred until init)."""

    def cb():
        s = default_generator(0).seed()
        for i in range(1, _devices.device_count()):
            default_generator(i).manual_seed(s)

    _lazy_call(cb)


def initial_seed() -> int:
    """The current npu generator's seed."""
    return default_generator().initial_seed()
