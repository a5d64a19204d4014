"""``torch.npu``: the npu device module, with torch.cuda's names and behaviour.

Devices, streams and events follow the execution model in DESIGN.md: compute
is synchronous; streams order deferred work (collectives); ``Event.record``
marks the point after everything the stream was made to wait for.

Partial in this release: RNG (random ops on npu draw from the CPU generator,
seeded by ``torch.manual_seed``), AMP, pinned memory and the full memory API
arrive with their own issues.
"""
from npudist.device._devices import (
    current_device,
    device,
    device_count,
    device_of,
    get_device_name,
    get_device_properties,
    init,
    is_available,
    is_initialized,
    set_device,
    synchronize,
)
from npudist.device.memory import (
    empty_cache,
    max_memory_allocated,
    max_memory_reserved,
    mem_get_info,
    memory_allocated,
    memory_reserved,
    memory_stats_as_nested_dict,
    reset_peak_memory_stats,
)
from npudist.device.random import _is_in_bad_fork, manual_seed, manual_seed_all
from npudist.device.streams import (
    Event,
    Stream,
    StreamContext,
    current_stream,
    default_stream,
    set_stream,
    stream,
)

__all__ = [
    "Event",
    "Stream",
    "StreamContext",
    "current_device",
    "current_stream",
    "default_stream",
    "device",
    "device_count",
    "device_of",
    "empty_cache",
    "get_device_name",
    "get_device_properties",
    "init",
    "is_available",
    "is_initialized",
    "manual_seed",
    "manual_seed_all",
    "max_memory_allocated",
    "max_memory_reserved",
    "mem_get_info",
    "memory_allocated",
    "memory_reserved",
    "memory_stats_as_nested_dict",
    "reset_peak_memory_stats",
    "set_device",
    "set_stream",
    "stream",
    "synchronize",
]
