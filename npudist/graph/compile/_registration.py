"""Registers npu with Dynamo and Inductor through their registration hooks.

``register()`` calls ``register_interface_for_device`` ("npu", "npu:N"),
``register_backend_for_device("npu", ..., device_custom_config=config)`` and
``register_device_op_overrides("npu", ...)``, and registers the Dynamo
backend ``"npugraphs"`` (``torch._dynamo.register_backend``). It imports only
``torch._dynamo.device_interface`` and ``torch._inductor.codegen.common``;
the code generator itself (``_inductor.py``, which imports Inductor's C++
and wrapper code generators, ~0.7 s) is imported the first time Inductor asks
for the npu scheduling or wrapper.
"""
from __future__ import annotations

_registered = False


class _NPUSchedulingEntry:
    """What Inductor's registry holds for the npu scheduling (it must be a class):
    constructing it imports and returns the real ``NPUScheduling``."""

    def __new__(cls, scheduler):
        from npudist.graph.compile._inductor import NPUScheduling

        return NPUScheduling(scheduler)


class _EntryMeta(type):
    @property
    def supports_caching(cls) -> bool:
        # Inductor asks before every FX-graph-cache lookup. Under mode="reduce-overhead" an npu
        # graph is generated afresh each time, so the compile-time UserWarning (the mode has
        # no effect on npu yet) is never skipped by a cache hit.
        from torch._inductor import config

        return not config.triton.cudagraphs


class _NPUWrapperCodegenEntry(metaclass=_EntryMeta):
    """What Inductor's registry holds for the npu wrapper: defers the import of the real class."""

    @staticmethod
    def create(*args, **kwargs):
        from npudist.graph.compile._inductor import NPUWrapperCodegen

        return NPUWrapperCodegen.create(*args, **kwargs)


def npugraphs(gm, example_inputs, **kwargs):
    """``torch.compile(backend="npugraphs")``: Inductor, then replay through
    ``torch.npu.NPUGraph`` (npudist.graph.compile._npugraphs)."""
    from npudist.graph.compile._npugraphs import npugraphs as _npugraphs

    return _npugraphs(gm, example_inputs, **kwargs)


def register() -> None:
    """Registers npu with Dynamo and Inductor (idempotent; cheap once torch._dynamo is imported)."""
    global _registered
    if _registered:
        return
    from torch._dynamo.device_interface import register_interface_for_device
    from torch._inductor.codegen.common import register_backend_for_device, register_device_op_overrides

    import npudist.device as npu
    from npudist.graph.compile import config
    from npudist.graph.compile._dynamo import NPUInterface
    from npudist.graph.compile._op_overrides import NPUDeviceOpOverrides

    register_interface_for_device("npu", NPUInterface)
    try:
        count = npu.device_count()
    except ValueError:  # invalid NPUDIST_* configuration: torch.npu reports it on first use
        count = 0
    for index in range(count):
        register_interface_for_device(f"npu:{index}", NPUInterface)
    register_backend_for_device(
        "npu",
        _NPUSchedulingEntry,
        _NPUWrapperCodegenEntry,
        device_custom_config=config,
    )
    register_device_op_overrides("npu", NPUDeviceOpOverrides())
    from torch._dynamo import register_backend

    try:
        register_backend(npugraphs, name="npugraphs")
    except AssertionError:  # "duplicate name": a real torch_npu registered it first
        pass
    _registered = True
