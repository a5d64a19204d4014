"""Lazy initialisation of ``torch.npu``, with torch.cuda's semantics.

``torch.npu.is_initialized()`` reports Python-side lazy init only, exactly as
``torch.cuda.is_initialized()``: it turns True in :func:`_lazy_init`, which runs
on the first Python-level use of the device — a tensor created on npu (PyTorch
calls ``torch.npu._lazy_init`` from C++ for every device that defines it),
``torch.npu.set_device`` / ``current_device`` / ``synchronize`` / ``Stream`` /
the RNG getters, ``torch.accelerator.set_device_index`` /
``current_device_index``. C++ touching the device (the hccl backend of
``init_process_group(device_id=...)``) does not flip it; ``device_count``,
``is_available``, ``manual_seed*`` and the memory statistics getters do not
initialise either (seeding is queued and applied at init, as on CUDA).

This matters beyond tidiness: DeviceMesh sets the current device from
LOCAL_RANK only while the device module reports not initialised, and FSDP2's
default mesh takes its device from ``current_device()`` (docs/architecture.md, "Registration order").

Separately, the C++ core remembers any use of the device (by Python or C++)
to refuse npu in a child forked after it (``_is_in_bad_fork``).
"""
from __future__ import annotations

import threading
import traceback
from collections.abc import Callable

from npudist import _C

_initialized = False
_initialization_lock = threading.Lock()
_tls = threading.local()
_queued_calls: list[tuple[Callable[[], None], list[str]]] = []


class DeferredNpuCallError(Exception):
    """A call queued before npu was initialised (e.g. ``torch.npu.manual_seed``) failed when it ran at init."""


class _LazySeedTracker:
    # Seeding has no memory: keep only the latest manual_seed and manual_seed_all,
    # in the order of their latest calls (same rule as torch.cuda).
    def __init__(self):
        self.seed_cb = None
        self.seed_all_cb = None
        self.order: list = []

    def queue_seed(self, cb, stack):
        self.seed_cb = (cb, stack)
        self.order = [self.seed_all_cb, self.seed_cb]

    def queue_seed_all(self, cb, stack):
        self.seed_all_cb = (cb, stack)
        self.order = [self.seed_cb, self.seed_all_cb]

    def calls(self) -> list:
        return [c for c in self.order if c is not None]


_seed_tracker = _LazySeedTracker()


def _is_in_bad_fork() -> bool:
    """True in a child process forked after npu was used in its parent (as torch.cuda's)."""
    return _C._is_in_bad_fork()


def is_initialized() -> bool:
    """Whether npu's Python state was initialised, as ``torch.cuda.is_initialized()``.

    False until the first Python-level use (see the module docstring), and in
    a child forked after npu was used.
    """
    return _initialized and not _C._is_in_bad_fork()


def _lazy_call(callable: Callable[[], None], *, seed: bool = False, seed_all: bool = False) -> None:
    """Runs ``callable`` now if npu is initialised, else at initialisation (torch.cuda._lazy_call)."""
    with _initialization_lock:
        if is_initialized():
            callable()
            return
        stack = traceback.format_stack()
        if seed_all:
            _seed_tracker.queue_seed_all(callable, stack)
        elif seed:
            _seed_tracker.queue_seed(callable, stack)
        else:
            _queued_calls.append((callable, stack))


def _lazy_init() -> None:
    """Initialises npu's Python state once per process (thread-safe, re-entrant from queued calls).

    Raises:
        RuntimeError: in a child forked after npu was used in the parent.
        ValueError: NPUDIST_DEVICE_COUNT / NPUDIST_DEVICE_MEMORY /
            ASCEND_RT_VISIBLE_DEVICES describe no valid set of devices.
        DeferredNpuCallError: a queued call (e.g. a seed) failed; the message
            shows where it was made.
    """
    global _initialized
    if _initialized and not _C._is_in_bad_fork() or hasattr(_tls, "is_initializing"):
        return
    with _initialization_lock:
        if is_initialized():
            return
        _C._mark_initialized()  # raises in a bad fork, with torch.cuda's wording
        _C._device_count()  # raises on an invalid configuration (cached afterwards)
        _tls.is_initializing = True
        try:
            # Kept until initialisation succeeds: a failing call raises again at the next
            # attempt, as torch.cuda's queued calls do.
            for call, stack in _seed_tracker.calls() + list(_queued_calls):
                try:
                    call()
                except Exception as err:
                    raise DeferredNpuCallError(
                        f"npu call failed lazily at initialization with error: {err}\n\n"
                        f"npu call was originally invoked at:\n\n{''.join(stack)}"
                    ) from err
        finally:
            del _tls.is_initializing
        _queued_calls.clear()
        _seed_tracker.__init__()
        _initialized = True


def init() -> None:
    """Initialises npu's Python state (``torch.npu.init``, as ``torch.cuda.init``); no-op when done."""
    _lazy_init()
