"""The ``hccl`` c10d backend: collectives between npu ranks.

``import npudist`` registers it, so ordinary PyTorch works::

    dist.init_process_group("hccl")                       # or backend="hccl", device_id=torch.device("npu", i)
    dist.get_default_backend_for_device("npu") == "hccl"  # True
    dist.all_reduce(torch.ones(4, device="npu"))

hccl is registered for npu only, as torch_npu registers it (and torch nccl for cuda):
``init_process_group("hccl")`` gives a group whose default device is npu, and a cpu
tensor on it fails as on torch_npu (c10d: no backend for device type cpu). hccl's
engine serves cpu tensors too (npu memory is host memory): name it for cpu to use
that, ``init_process_group("cpu:hccl,npu:hccl")``; ``"cpu:gloo,npu:hccl"`` gives
PyTorch's Gloo for cpu beside it. Within a host,
ranks exchange data through shared memory; a group spanning hosts (host
identity: ``NPUDIST_HOSTNAME`` or the hostname) runs all_reduce and broadcast
hierarchically with Gloo between one leader per host, and its other
collectives through a Gloo group of all its ranks. ``HCCL_SOCKET_IFNAME`` (or
``GLOO_SOCKET_IFNAME``) picks the network interface Gloo uses.

Semantics follow ProcessGroupNCCL: collectives run on the group's stream behind
the issuing stream's pending work; ``Work.wait()`` is stream-ordered for npu
tensors and blocking for cpu tensors, with a timeout, or with
``TORCH_HCCL_BLOCKING_WAIT=1``. See docs/collectives.md for the algorithms, the
environment variables and the errors.
"""
from __future__ import annotations

import datetime

import torch
import torch.distributed as dist

from npudist import _C

__all__ = ["ProcessGroupHCCL", "is_available"]

if not hasattr(_C, "ProcessGroupHCCL"):
    _C._register_hccl(_C)
ProcessGroupHCCL = _C.ProcessGroupHCCL


def is_available() -> bool:
    """True: the hccl backend is built into npudist and registered with torch.distributed."""
    return True


def _socket_ifname() -> str | None:
    from npudist import _env

    return _env.get_str("HCCL_SOCKET_IFNAME") or _env.get_str("GLOO_SOCKET_IFNAME")


def _make_gloo(store, rank: int, size: int, timeout: datetime.timedelta):
    """Builds the Gloo group that connects hosts (called from C++ for groups spanning hosts)."""
    ifname = _socket_ifname()
    if ifname is None:
        return dist.ProcessGroupGloo(store, rank, size, timeout)
    opts = dist.ProcessGroupGloo._Options()
    opts._timeout = timeout
    opts._devices = [dist.ProcessGroupGloo.create_device(interface=ifname)]
    return dist.ProcessGroupGloo(store, rank, size, opts)


def _home_device() -> int:
    # The C++ current device, read without torch.npu's lazy init: creating a group
    # (init_process_group(device_id=...)) must leave torch.npu.is_initialized()
    # False, as ProcessGroupNCCL leaves torch.cuda's (DeviceMesh relies on it).
    return _C._current_device() if torch.npu.device_count() else 0


# npudist.plan's logical capture (docs/plan.md): while set, it makes every "hccl" group (torch's FakeProcessGroup, or
# the real pipeline group of a multi-stage capture), so an unmodified script's init_process_group("hccl") and
# new_group() reach the logical world size without peers. Called as creator(dist_backend_opts, backend_options).
_capture_groups = None


def _create(dist_backend_opts, backend_options) -> ProcessGroupHCCL:
    """The creator torch.distributed calls for every hccl group (extended API); under npudist.plan's capture
    (``_capture_groups``) what the capture makes (npudist.plan.pipeline_group: no communication but the pipeline's)."""
    o = dist_backend_opts
    if _capture_groups is not None:
        return _capture_groups(o, backend_options)
    return ProcessGroupHCCL(
        o.store,
        o.group_rank,
        o.group_size,
        o.timeout,
        o.group_id or "",
        list(o.global_ranks_in_group or []),
        _make_gloo,
        _home_device(),
    )


def _register() -> None:
    if "HCCL" in dist.Backend._plugins:
        return
    # A list, not a string: register_backend iterates it. npu only, as torch_npu: a
    # group created as "hccl" then defaults to npu (object collectives, barrier, DCP);
    # "cpu:hccl,npu:hccl" still reaches hccl's cpu path.
    dist.Backend.register_backend("hccl", _create, extended_api=True, devices=["npu"])


_register()
