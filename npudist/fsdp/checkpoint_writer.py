"""``checkpoint_writer``: DCP's ``FileSystemWriter`` with the ``kind=kill,ckpt_write=N`` fault hook.

A checkpoint written by DCP is torn when a rank dies while it writes; to rehearse that, a fault
must fire *inside* the write, after the file is opened and before its data is all on disk.
DCP offers no registry of storage writers that ``dcp.save(checkpoint_id=path)`` would consult,
so the hook lives in a ``FileSystemWriter`` subclass that the job passes as
``storage_writer=`` (the flagship does). Without a configured fault it behaves exactly as
``FileSystemWriter`` (one counter increment per save).
"""
from __future__ import annotations

import os
from contextlib import contextmanager

from torch.distributed.checkpoint import FileSystemWriter
from torch.distributed.checkpoint.filesystem import FileSystem

from npudist import fault_inject


class _Dying:
    """A write stream that writes half of the first non-empty buffer, syncs it, then SIGKILLs the process."""

    def __init__(self, raw, spec, n, name):
        self._raw, self._spec, self._n, self._name = raw, spec, n, name

    def write(self, data):
        view = memoryview(data).cast("B")
        if len(view) == 0:
            return 0
        self._raw.write(view[: max(1, len(view) // 2)])
        self._raw.flush()
        os.fsync(self._raw.fileno())
        fault_inject.kill_during_write(self._spec, self._n, self._name)
        return len(view)  # not reached

    def __getattr__(self, name):
        return getattr(self._raw, name)


class _DyingFileSystem(FileSystem):
    def __init__(self, spec, n):
        super().__init__()
        self._spec, self._n = spec, n

    @contextmanager
    def create_stream(self, path, mode):
        with super().create_stream(path, mode) as stream:
            yield _Dying(stream, self._spec, self._n, os.path.basename(os.fspath(path))) if "w" in mode else stream


class NpuFileSystemWriter(FileSystemWriter):
    """``torch.distributed.checkpoint.FileSystemWriter`` (same arguments, same files) whose
    ``write_data`` counts this rank's checkpoint writes for fault injection: the write that a
    ``kind=kill,ckpt_write=N`` spec names (docs/fault_injection.md) SIGKILLs the rank after
    half of the first buffer of its first shard file reached the disk, so the checkpoint is
    left torn as by a real crash (no ``.metadata``, a truncated shard file)."""

    def write_data(self, plan, planner):
        n, spec = fault_inject.count_ckpt_write()
        if spec is None:
            return super().write_data(plan, planner)
        fs, self.fs = self.fs, _DyingFileSystem(spec, n)
        try:
            fut = super().write_data(plan, planner)
        finally:
            self.fs = fs
        # this rank had nothing to write: die before the save can complete all the same
        fault_inject.kill_during_write(spec, n, "no data for this rank")
        return fut


def checkpoint_writer(path: str | os.PathLike, **kwargs) -> NpuFileSystemWriter:
    """The storage writer to pass to ``dcp.save`` / ``dcp.async_save`` (``storage_writer=``) for
    a checkpoint directory ``path``; kwargs go to ``FileSystemWriter`` (e.g. ``thread_count``)."""
    return NpuFileSystemWriter(path, **kwargs)
