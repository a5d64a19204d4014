"""npu random number generation, with torch.cuda's API.

Each npu has a default ``torch.Generator`` whose state is Philox-shaped, as
CUDA's: 16 bytes, a uint64 seed then an int64 offset (DTensor's RNG tracker
reads and writes it). Random ops on npu (uniform_, normal_, bernoulli_,
random_, exponential_, randperm, multinomial, dropout, ...) draw from the
generator of their device; see csrc/core/generator.h for how numbers are made.
"""
from __future__ import annotations

from typing import Any, Iterable

import torch

from npudist import _C
from npudist.device import _devices

_default_generators: dict[int, torch.Generator] = {}


def _is_in_bad_fork() -> bool:
    """True in a child process forked after npu was initialised in its parent (as torch.cuda's)."""
    return _C._is_in_bad_fork()


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

    Raises:
        TypeError: the state is not a torch.uint8 (ByteTensor) cpu tensor.
        RuntimeError: it is not 16 bytes, or its offset is negative.
    """
    if not isinstance(new_state, torch.Tensor) or new_state.dtype != torch.uint8:
        raise TypeError(f"RNG state must be a torch.ByteTensor (uint8) from torch.npu.get_rng_state, got "
                        f"{getattr(new_state, 'dtype', type(new_state).__name__)}")
    if new_state.device.type != "cpu":
        raise TypeError(f"RNG state must be a cpu tensor, got one on {new_state.device}")
    default_generator(device).set_state(new_state.detach().contiguous())


def set_rng_state_all(new_states: Iterable[torch.Tensor]) -> None:
    """set_rng_state for npu 0, 1, ... from a sequence of states."""
    for i, state in enumerate(new_states):
        set_rng_state(state, i)


def manual_seed(seed: int) -> None:
    """Seeds the current npu's generator (offset reset to 0)."""
    default_generator().manual_seed(int(seed))


def manual_seed_all(seed: int) -> None:
    """Seeds every visible npu's generator (torch.manual_seed calls this)."""
    for i in range(_devices.device_count()):
        default_generator(i).manual_seed(int(seed))


def seed() -> None:
    """Seeds the current npu's generator with a non-deterministic random number."""
    default_generator().seed()


def seed_all() -> None:
    """Seeds every npu's generator with one non-deterministic random number."""
    s = default_generator(0).seed()
    for i in range(1, _devices.device_count()):
        default_generator(i).manual_seed(s)


def initial_seed() -> int:
    """The current npu generator's seed."""
    return default_generator().initial_seed()
