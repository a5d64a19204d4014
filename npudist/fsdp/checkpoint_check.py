"""Is a DCP checkpoint directory complete and undamaged? (docs/training.md, "Choosing the checkpoint")

``torch.distributed.checkpoint`` (DCP) writes every rank's shard files first and the global
``.metadata`` last (rank 0, after all ranks reported their writes), renamed into place from a
temporary file. So a save that died part-way leaves no ``.metadata``; but a directory with a
``.metadata`` can still be damaged afterwards (a shard file deleted or cut short by a full disk,
a copy that stopped half-way, an unreadable ``.metadata``). ``checkpoint_problem`` checks what
DCP's own reader would need before anything is loaded, so a job never loads half a checkpoint.

Covered: no ``.metadata``; ``.metadata`` that cannot be read or unpickled; a shard file named
in the metadata that is missing; a shard file shorter than the last byte the metadata
locates in it. Not covered: bytes changed inside a file of the right length (bit rot); DCP
itself keeps no checksums.
"""
from __future__ import annotations

import os


def checkpoint_problem(path: str | os.PathLike) -> str | None:
    """Why the DCP checkpoint directory ``path`` cannot be loaded whole, or None if it can.

    Reads only ``.metadata`` (with DCP's ``FileSystemReader.read_metadata``) and the sizes of the
    shard files it names; cost: one small file read and one ``stat`` per shard file.
    Returns a short reason such as ``"no .metadata (the save did not finish)"`` or
    ``"shard file __1_0.distcp is truncated: 1024 bytes, the metadata needs 4096"``.
    """
    from torch.distributed.checkpoint import FileSystemReader

    path = os.fspath(path)
    if not os.path.isdir(path):
        return "not a directory"
    meta_path = os.path.join(path, ".metadata")
    if not os.path.exists(meta_path):
        return "no .metadata (the save did not finish)"
    try:
        metadata = FileSystemReader(path).read_metadata()
    except Exception as e:  # noqa: BLE001  (any unpickling error means the same: unreadable)
        return f"unreadable .metadata ({type(e).__name__}: {e})"
    storage = getattr(metadata, "storage_data", None)
    if not isinstance(storage, dict):
        return "unreadable .metadata (it locates no data: storage_data is missing)"
    needed: dict[str, int] = {}
    for info in storage.values():
        end = int(info.offset) + int(info.length)
        needed[info.relative_path] = max(needed.get(info.relative_path, 0), end)
    for name in sorted(needed):
        file = os.path.join(path, name)
        try:
            size = os.stat(file).st_size
        except FileNotFoundError:
            return f"shard file {name} is missing"
        except OSError as e:
            return f"shard file {name} cannot be read ({e.strerror})"
        if size < needed[name]:
            return f"shard file {name} is truncated: {size} bytes, the metadata needs {needed[name]}"
    return None
