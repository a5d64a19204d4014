"""Gives PyTorch's autograd device threads a moment at interpreter exit.

Why: in PyTorch 2.13 every ``backward()`` stashes a ``contextvars`` context in the
thread-local state that the autograd GraphTask copies (torch/autograd/graph.py,
``_engine_run_backward``). For a backward that ran npu work, the last reference to
that GraphTask can be dropped on the engine's npu device thread ("pt_autograd_0")
a few microseconds *after* the caller's ``backward()`` returned. When the script
ends right then, that drop needs the GIL while Python is finalizing: the thread is
unwound by ``pthread_exit`` inside a noexcept destructor and the process dies with
"terminate called without an active exception" (SIGABRT), after all user work is
done. It shows when backward used a non-default npu stream (DDP's, or a user's).

``atexit`` handlers run before finalization, while other threads may still take the
GIL, so sleeping there briefly lets the device thread finish its release. This is a
workaround for a race inside torch (any device with autograd device threads has it);
it costs at most ``_GRACE_S`` at exit, and only in processes that initialised npu.
"""
import atexit
import time

_GRACE_S = 0.05
_installed = False


def _let_device_threads_settle():
    import torch

    if getattr(torch, "npu", None) is not None and torch.npu.is_initialized():
        time.sleep(_GRACE_S)  # releases the GIL; see the module docstring


def install():
    """Registers the exit hook once per process (idempotent)."""
    global _installed
    if not _installed:
        atexit.register(_let_device_threads_settle)
        _installed = True
