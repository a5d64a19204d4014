"""Stops npudist's threads at interpreter exit, before Python finalizes.

Why: a thread that needs the GIL while Python is finalizing is unwound by
``pthread_exit``; inside a C++ ``noexcept`` frame that is ``std::terminate``
("terminate called without an active exception", SIGABRT) after all user work
is done. ``atexit`` handlers run before finalization, while other threads can
still take the GIL, so this is where every thread the extension started is
finished (docs/lifecycle.md):

- ``npudist._C._shutdown_threads()`` completes the work queued on every npu
  stream (collectives still in flight included), joins every stream worker
  (the hccl groups' progress threads among them) and stops the hccl watchdog,
  its store poller and its heartbeat monitor. Afterwards no worker starts again.
- PyTorch's own autograd device thread ("pt_autograd_0") may drop the last
  reference to a backward's GraphTask a few microseconds after ``backward()``
  returned (torch 2.13 stashes a ``contextvars`` context there, whose release
  needs the GIL). It is torch's thread, not ours: nothing can join it, so a
  short sleep (``_GRACE_S``) gives it the moment it needs. That part is a
  workaround for a race inside torch (any device with autograd device threads
  has it).

Only processes that used npu pay anything.
"""
import atexit
import time

_GRACE_S = 0.05
_installed = False


def _shutdown():
    import torch

    from npudist import _C

    # Cheap when npu was never used (no stream, no group: nothing to stop).
    _C._shutdown_threads()  # releases the GIL while it waits
    if getattr(torch, "npu", None) is not None and torch.npu.is_initialized():
        time.sleep(_GRACE_S)  # releases the GIL; see the module docstring


def install():
    """Registers the exit hook once per process (idempotent)."""
    global _installed
    if not _installed:
        atexit.register(_shutdown)
        _installed = True
