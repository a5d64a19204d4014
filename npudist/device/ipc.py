"""npu tensors through ``torch.multiprocessing``: queues, pipes, spawned processes, DataLoader workers.

Sending an npu tensor shares its storage, as CUDA tensors are shared (PyTorch's
"Note [Sharing CUDA tensors]"): the receiver maps the sender's npu memory, no
bytes are copied, and writes on either side are seen by the other.

How (docs/device_api.md, "Sharing npu tensors between processes"):

- The device core exports the storage: the driver names the ranges of the
  device's memory file (a memfd) that back it; the file descriptor and a
  reference-count file travel with ``multiprocessing.reduction.DupFd``
  (SCM_RIGHTS over a Unix socket, as torch's ``file_descriptor`` strategy does
  for cpu tensors). The receiver maps those ranges into its own npu address
  window, so the tensor is an ordinary ``npu:<i>`` tensor there.
- The sender keeps the storage alive (the caching allocator cannot reuse it)
  until every receiver has freed its tensors; ``torch.npu.ipc_collect()`` then
  releases it, and so does every later send. A storage sent but never received
  stays held until the sender exits.
- If the sender exits while receivers still hold its tensors, it warns; the
  receivers' tensors stay valid (their mappings keep the memory), but that
  memory is no longer counted against any device's capacity.
- ``share_memory_()`` and ``is_shared()`` behave as for CUDA tensors: no-op, and
  True.

PyTorch 2.13's ``torch/multiprocessing/reductions.py`` handles cuda storages
only and has no hook for other devices, so :func:`register` installs reducers
with ``ForkingPickler.register`` (public API) for ``torch.Tensor``,
``torch.nn.Parameter`` and ``torch.UntypedStorage``. They handle npu tensors
and defer to torch's own ``reduce_tensor`` / ``reduce_storage`` for every other
tensor, so cpu and cuda sharing are unchanged.

Failures never hang the receiver. When an npu tensor cannot be shared (for
example in a child forked after npu was initialised, where npu is unusable),
the sender warns (``NpuSharingWarning``) and sends a marker whose unpickling
raises :class:`NpuSharingError` with the reason in the receiver — a
``multiprocessing.Queue`` pickles on a feeder thread, whose exceptions would
otherwise be printed and the item dropped, leaving the receiver (a DataLoader's
main process, say) waiting forever. A receiver reading a message after its
sender exited gets :class:`NpuSharingError` at once.

Limits: a received npu tensor cannot be sent on to a third process (send the
original, or ``clone()`` it first); sparse and nested npu tensors are not shared.
"""
import multiprocessing.util
import os
import threading
import warnings
from multiprocessing.reduction import DupFd, ForkingPickler

import torch
from torch.multiprocessing import reductions as _torch_reductions

__all__ = ["NpuSharingError", "NpuSharingWarning", "ipc_collect", "register"]


class NpuSharingError(RuntimeError):
    """An npu tensor could not be shared with, or received from, another process."""


class NpuSharingWarning(RuntimeWarning):
    """Raised as a warning in the sender when an npu tensor cannot be shared, or when it exits
    while consumers still hold its npu tensors."""


def ipc_collect() -> int:
    """Releases npu storages this process shared that no consumer holds any more, as
    ``torch.cuda.ipc_collect``.

    Returns:
        the number of shared storages still held by consumers (an npudist extension; CUDA's
        returns None).
    """
    from npudist import _C

    return int(_C._ipc_collect())


# Receiver side: the same sender storage received twice maps to one storage, as torch's
# shared_cache does for cuda handles. (sender pid, counter token, entry id) -> StorageWeakRef.
_received = {}
_received_lock = threading.Lock()
_received_inserts = 0


def _lookup_received(key):
    with _received_lock:
        ref = _received.get(key)
        if ref is None or ref.expired():
            return None
        return torch.UntypedStorage._new_with_weak_ptr(ref.cdata)


def _remember_received(key, storage):
    global _received_inserts
    with _received_lock:
        _received[key] = torch.multiprocessing.reductions.StorageWeakRef(storage)
        _received_inserts += 1
        if _received_inserts % 256 == 0:
            for k in [k for k, r in _received.items() if r.expired()]:
                del _received[k]


def _raise_sharing_error(message):
    """Unpickling a marker for a tensor the sender could not share raises here, in the receiver."""
    raise NpuSharingError(message)


def _detach(dup_fd, what, producer_pid):
    try:
        return dup_fd.detach()
    except (OSError, EOFError) as e:
        raise NpuSharingError(
            f"could not receive the {what} of an npu tensor from process {producer_pid}: {type(e).__name__}: {e}. "
            "The sender has probably exited (or was killed) before this process read the message; keep a process "
            "alive until its consumers have received the npu tensors it sent."
        ) from e


def _rebuild_npu_storage(device, mem_dupfd, extents, offset, nbytes, counter_dupfd, token, slot, producer_pid,
                         entry_id):
    from npudist import _C

    # Always take both descriptors, so the sender's fd server lets go of them.
    counter_fd = _detach(counter_dupfd, "reference count", producer_pid)
    try:
        try:
            mem_fd = _detach(mem_dupfd, "memory", producer_pid)
        except NpuSharingError:
            _C._ipc_release_reference(counter_fd, token, slot)
            raise
        try:
            key = (producer_pid, token, entry_id)
            storage = _lookup_received(key)
            if storage is not None:
                _C._ipc_release_reference(counter_fd, token, slot)  # this message's reference is not needed
                return storage
            storage = _C._ipc_import(device, mem_fd, extents, offset, nbytes, counter_fd, token, slot).untyped_storage()
            _remember_received(key, storage)
            return storage
        finally:
            os.close(mem_fd)
    finally:
        os.close(counter_fd)


def rebuild_npu_tensor(tensor_cls, size, stride, storage_offset, dtype, requires_grad, storage_args):
    """Receiver side of :func:`reduce_npu_tensor`: maps the sender's storage and views it."""
    storage = _rebuild_npu_storage(*storage_args)
    t = torch.empty(0, dtype=dtype, device=storage.device).set_(storage, storage_offset, size, stride)
    if tensor_cls is torch.nn.parameter.Parameter:
        return torch.nn.parameter.Parameter(t, requires_grad=requires_grad)
    return t.requires_grad_(requires_grad)


def _rebuild_empty_npu_tensor(tensor_cls, size, stride, dtype, requires_grad, device):
    t = torch.empty_strided(size, stride, dtype=dtype, device=device)
    if tensor_cls is torch.nn.parameter.Parameter:
        return torch.nn.parameter.Parameter(t, requires_grad=requires_grad)
    return t.requires_grad_(requires_grad)


def _cannot_share(message):
    warnings.warn(f"npu tensor not shared: {message}", NpuSharingWarning, stacklevel=3)
    return (_raise_sharing_error, (message,))


def _export_storage(storage_holder):
    """Exports the storage of npu tensor `storage_holder`; returns the receiver's storage args or raises."""
    from npudist import _C

    device = storage_holder.device
    # Deferred work queued on the device's current stream (a collective) may still write the
    # tensor: finish it, as CUDA's sender records an event the receiver waits on.
    torch.npu.current_stream(device).synchronize()
    dev, mem_fd, extents, offset, nbytes, counter_fd, token, slot, entry_id = _C._ipc_export(storage_holder)
    try:
        return (dev, DupFd(mem_fd), extents, offset, nbytes, DupFd(counter_fd), token, slot, os.getpid(), entry_id)
    except BaseException:
        _C._ipc_release_reference(counter_fd, token, slot)
        raise


def _sharing_problem(tensor):
    from npudist import _C

    if _C._is_in_bad_fork():
        return ("this process was forked after npu was initialised in its parent, so npu is unusable here "
                "(Cannot re-initialize npu in forked subprocess). Start workers with the 'spawn' or 'forkserver' "
                "start method (DataLoader(multiprocessing_context='spawn'))")
    if tensor.layout != torch.strided:
        return f"only strided npu tensors can be shared, this one is {tensor.layout}"
    return None


def reduce_npu_tensor(tensor):
    """Pickles an npu tensor for another process by sharing its storage (see the module docstring)."""
    if tensor.requires_grad and not tensor.is_leaf:
        raise RuntimeError(
            "Cannot send a non-leaf npu tensor that requires grad to another process: autograd graphs do not "
            "cross process boundaries. Send tensor.detach() to share the data."
        )
    torch.utils.hooks.warn_if_has_hooks(tensor)
    problem = _sharing_problem(tensor)
    if problem:
        return _cannot_share(problem)
    storage = tensor.untyped_storage()
    if storage.nbytes() == 0:
        return (_rebuild_empty_npu_tensor,
                (type(tensor), tensor.size(), tensor.stride(), tensor.dtype, tensor.requires_grad, tensor.device))
    holder = torch.empty(0, dtype=torch.uint8, device=tensor.device).set_(storage)
    try:
        storage_args = _export_storage(holder)
    except Exception as e:  # noqa: BLE001 - reported to both ends, see the module docstring
        return _cannot_share(f"{type(e).__name__}: {e}")
    return (rebuild_npu_tensor, (type(tensor), tensor.size(), tensor.stride(), tensor.storage_offset(), tensor.dtype,
                                 tensor.requires_grad, storage_args))


def _reduce_tensor(tensor):
    if tensor.device.type == "npu":
        return reduce_npu_tensor(tensor)
    return _torch_reductions.reduce_tensor(tensor)


def _rebuild_npu_untyped_storage(storage_args):
    return _rebuild_npu_storage(*storage_args)


def _reduce_storage(storage):
    if storage.device.type != "npu":
        return _torch_reductions.reduce_storage(storage)
    holder = torch.empty(0, dtype=torch.uint8, device=storage.device).set_(storage)
    problem = _sharing_problem(holder)
    if problem:
        return _cannot_share(problem)
    if storage.nbytes() == 0:
        return (_rebuild_empty_storage, (str(storage.device),))
    try:
        storage_args = _export_storage(holder)
    except Exception as e:  # noqa: BLE001  (any failure becomes the cannot-share error)
        return _cannot_share(f"{type(e).__name__}: {e}")
    return (_rebuild_npu_untyped_storage, (storage_args,))


def _rebuild_empty_storage(device):
    return torch.UntypedStorage(0, device=device)


def _warn_if_consumers_hold():
    try:
        held = ipc_collect()
    except Exception:  # noqa: BLE001 - never fail an exit over a warning
        return
    if held:
        warnings.warn(
            f"npu sharing: process {os.getpid()} is exiting while consumers still hold {held} npu storage(s) it "
            "shared. Their tensors stay valid (their mappings keep the memory) until they free them, but that memory "
            "is no longer counted against any npu's capacity. Keep producers alive until consumers are done, or "
            "send clones the consumer owns.",
            NpuSharingWarning,
            stacklevel=1,
        )


_registered = False


def register():
    """Installs the npu reducers with ``ForkingPickler.register`` (idempotent; npudist calls it at import).

    Covers ``torch.Tensor``, ``torch.nn.Parameter``, the legacy tensor classes and
    ``torch.UntypedStorage``; each defers to torch's reducer for non-npu objects. Also arranges
    the exit-time warning (via ``multiprocessing.util.Finalize``, which runs in the main process
    and in multiprocessing children, where atexit does not).
    """
    global _registered
    if _registered:
        return
    for cls in (torch.Tensor, torch.nn.parameter.Parameter, *torch._tensor_classes):
        ForkingPickler.register(cls, _reduce_tensor)
    ForkingPickler.register(torch.UntypedStorage, _reduce_storage)
    multiprocessing.util.Finalize(None, _warn_if_consumers_hold, exitpriority=10)
    _registered = True
