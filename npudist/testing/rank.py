"""The in-rank setup every multi-rank test shares (the one copy of what tests/hccl, tests/dtensor
and tests/fsdp each had in ``workers/common.py``).

Runs inside a rank started by :mod:`npudist.testing.multiproc` (``launch`` / ``run_on_ranks``),
whose environment carries the env:// rendezvous variables (RANK, WORLD_SIZE, LOCAL_RANK,
MASTER_ADDR, MASTER_PORT)::

    from npudist.testing import rank

    dev = rank.init()                          # set_device(npu:LOCAL_RANK), init_process_group("hccl")
    x = rank.deterministic_input(rank.rank(), (4,), torch.float32, seed=1, device=dev)

:func:`prepare` (run by ``init`` and by ``run_on_ranks`` before the test's function) arms a
stack dump for a hung rank and sets one intra-op thread. Importing this module imports torch.
"""
from __future__ import annotations

import datetime
import faulthandler
import os

import torch
import torch.distributed as dist

_prepared = False


def rank() -> int:
    """This process's global rank (RANK)."""
    return int(os.environ["RANK"])


def world_size() -> int:
    """The job's number of ranks (WORLD_SIZE)."""
    return int(os.environ["WORLD_SIZE"])


def local_rank() -> int:
    """This process's rank on its (simulated) host (LOCAL_RANK, else RANK)."""
    return int(os.environ.get("LOCAL_RANK", os.environ["RANK"]))


def prepare(hang_dump_s: float | None = None) -> None:
    """Once per process: a hung rank prints every thread's stack and exits after ``hang_dump_s``
    seconds (default WORKER_HANG_DUMP_S, else 240: below the tests' timeouts, so the dump reaches
    the test's failure message), and one intra-op thread (several ranks share 2 cores, as torchrun
    sets OMP_NUM_THREADS=1)."""
    global _prepared
    if _prepared:
        return
    _prepared = True
    if hang_dump_s is None:
        hang_dump_s = float(os.environ.get("WORKER_HANG_DUMP_S", "240"))
    faulthandler.dump_traceback_later(hang_dump_s, exit=True)
    torch.set_num_threads(1)


def init(backend: str = "hccl", device_id: bool = True, timeout_s: float | None = None,
         device_index: int | None = None, **kw) -> torch.device:
    """Selects ``npu:LOCAL_RANK`` (or ``npu:device_index``; modulo the device count) and calls
    ``init_process_group(backend)`` (env:// rendezvous); returns that device.

    backend: any string init_process_group takes, e.g. ``"hccl"`` or ``"cpu:gloo,npu:hccl"``.
    device_id: pass the device as ``device_id`` (eager init of hccl's communicator, as torch does
    for NCCL). timeout_s: the group's timeout in seconds (default: torch's). Other keyword
    arguments go to ``init_process_group``.
    """
    import npudist  # noqa: F401  (registers npu and hccl when torch's backend autoload is off)

    prepare()
    index = local_rank() if device_index is None else device_index
    torch.npu.set_device(index % torch.npu.device_count())
    dev = torch.device("npu", torch.npu.current_device())
    if device_id:
        kw.setdefault("device_id", dev)
    if timeout_s is not None:
        kw["timeout"] = datetime.timedelta(seconds=timeout_s)
    dist.init_process_group(backend, **kw)
    return dev


def deterministic_input(rank: int, shape, dtype: torch.dtype, seed: int, device, kind: str = "any") -> torch.Tensor:
    """Rank ``rank``'s input for a collective check, the same wherever it is built (every rank can
    build every rank's input to compute the expected result).

    Floating dtypes: normal values (``kind="product"``: uniform in [0.5, 1.5), so products stay
    finite); uint8: 0..5; other integers: -5..5; bool: random. Built on cpu from
    ``seed * 1000 + rank``, then moved to ``device``.
    """
    g = torch.Generator().manual_seed(seed * 1000 + rank)
    if dtype == torch.bool:
        t = torch.randint(0, 2, shape, generator=g).bool()
    elif dtype.is_floating_point:
        if kind == "product":
            t = (torch.rand(shape, generator=g, dtype=torch.float64) + 0.5).to(dtype)
        else:
            t = torch.randn(shape, generator=g, dtype=torch.float64).to(dtype)
    elif dtype == torch.uint8:
        t = torch.randint(0, 6, shape, generator=g, dtype=dtype)
    else:
        t = torch.randint(-5, 6, shape, generator=g, dtype=dtype)
    return t.to(device)
