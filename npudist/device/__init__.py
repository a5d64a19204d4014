"""``torch.npu``: the npu device module, with torch.cuda's names and behaviour.

Devices, streams and events follow the execution model in docs/architecture.md: compute
is synchronous; streams order deferred work (collectives); ``Event.record``
marks the point after everything the stream was made to wait for.

Legacy tensor types (``torch.npu.FloatTensor``, ...): npudist.device.tensor_types.

Memory: the caching allocator's statistics, summary, limits and snapshots
(``torch.npu.memory``), see docs/memory.md.
"""
from npudist.device import amp, memory
from npudist.device._devices import (
    current_device,
    device,
    device_count,
    device_of,
    get_amp_supported_dtype,
    get_device_capability,
    get_device_name,
    get_device_properties,
    init,
    is_available,
    is_initialized,
    set_device,
    synchronize,
)
from npudist.device._lazy import DeferredNpuCallError, _lazy_call, _lazy_init  # noqa: F401  (torch.npu._lazy_init/_lazy_call, as torch.cuda has them)
from npudist.device.memory import (
    caching_allocator_alloc,
    caching_allocator_delete,
    empty_cache,
    get_per_process_memory_fraction,
    max_memory_allocated,
    max_memory_reserved,
    mem_get_info,
    memory_allocated,
    memory_reserved,
    memory_snapshot,
    memory_stats,
    memory_stats_as_nested_dict,
    memory_summary,
    reset_accumulated_memory_stats,
    reset_max_memory_allocated,
    reset_peak_memory_stats,
    set_per_process_memory_fraction,
)
from npudist.device.random import (
    _is_in_bad_fork,  # noqa: F401  (torch.npu._is_in_bad_fork, as torch.cuda has it)
    default_generator,
    default_generators,
    get_rng_state,
    get_rng_state_all,
    initial_seed,
    manual_seed,
    manual_seed_all,
    seed,
    seed_all,
    set_rng_state,
    set_rng_state_all,
)
from npudist.device.streams import (
    Event,
    Stream,
    StreamContext,
    current_stream,
    default_stream,
    set_stream,
    stream,
)
from npudist.device.tensor_types import (
    BFloat16Tensor,
    BoolTensor,
    ByteTensor,
    CharTensor,
    DoubleTensor,
    FloatTensor,
    HalfTensor,
    IntTensor,
    LongTensor,
    ShortTensor,
)
from npudist.device.torch_npu_extras import (
    can_device_access_peer,
    config,
    get_autocast_dtype,
    get_mm_bmm_format_nd,
    get_soc_version,
    ipc_collect,
    is_autocast_enabled,
    is_bf16_supported,
    is_jit_compile_false,
    max_memory_cached,
    memory_cached,
    mstx,
    reset_max_memory_cached,
    set_autocast_dtype,
    set_autocast_enabled,
    set_compile_mode,
    set_mm_bmm_format_nd,
    set_option,
)
from npudist.graph.capture import (
    NPUGraph,
    graph,
    graph_pool_handle,
    is_current_stream_capturing,
    make_graphed_callables,
)

__all__ = [
    "BFloat16Tensor",
    "BoolTensor",
    "ByteTensor",
    "CharTensor",
    "DoubleTensor",
    "FloatTensor",
    "HalfTensor",
    "IntTensor",
    "LongTensor",
    "ShortTensor",
    "DeferredNpuCallError",
    "amp",
    "can_device_access_peer",
    "config",
    "get_autocast_dtype",
    "get_mm_bmm_format_nd",
    "get_soc_version",
    "ipc_collect",
    "is_autocast_enabled",
    "is_bf16_supported",
    "is_current_stream_capturing",
    "is_jit_compile_false",
    "max_memory_cached",
    "memory_cached",
    "mstx",
    "reset_max_memory_cached",
    "set_autocast_dtype",
    "set_autocast_enabled",
    "set_compile_mode",
    "set_mm_bmm_format_nd",
    "set_option",
    "Event",
    "NPUGraph",
    "graph",
    "graph_pool_handle",
    "is_current_stream_capturing",
    "make_graphed_callables",
    "Stream",
    "StreamContext",
    "current_device",
    "default_generator",
    "default_generators",
    "get_rng_state",
    "get_rng_state_all",
    "initial_seed",
    "seed",
    "seed_all",
    "set_rng_state",
    "set_rng_state_all",
    "current_stream",
    "default_stream",
    "device",
    "device_count",
    "device_of",
    "caching_allocator_alloc",
    "caching_allocator_delete",
    "empty_cache",
    "get_per_process_memory_fraction",
    "get_amp_supported_dtype",
    "get_device_capability",
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
    "memory",
    "memory_reserved",
    "memory_snapshot",
    "memory_stats",
    "memory_summary",
    "reset_accumulated_memory_stats",
    "reset_max_memory_allocated",
    "set_per_process_memory_fraction",
    "memory_stats_as_nested_dict",
    "reset_peak_memory_stats",
    "set_device",
    "set_stream",
    "stream",
    "synchronize",
]


def __getattr__(name):
    # torch.utils.checkpoint reads `torch.<device>._initialized` to decide whether to
    # save and restore the device RNG state around recomputation.
    if name == "_initialized":
        from npudist.device import _lazy

        return _lazy._initialized
    # torch_npu.npu is torch.npu: its public names we do not offer raise a clear error
    # (an AttributeError subclass, so hasattr/getattr-with-default probes still work).
    from npudist.compat.names import NotAvailableOnThisRuntime, missing

    err = missing("torch_npu.npu", name, _NOT_AVAILABLE_WHY)
    if isinstance(err, NotAvailableOnThisRuntime):
        raise err
    raise AttributeError(f"module 'torch.npu' has no attribute '{name}'", name=name)


_NOT_AVAILABLE_WHY = {
    "NPUGraph": "npu graphs (issue: graph capture/replay) have not landed yet",
    "graph": "npu graphs have not landed yet",
    "make_graphed_callables": "npu graphs have not landed yet",
    "stop_device": "the simulated npu cannot be stopped and restarted",
    "restart_device": "the simulated npu cannot be stopped and restarted",
    "check_uce_in_memory": "there are no uncorrectable memory errors on host memory",
}
