"""Inductor code generation for npu: the C++ CPU code generator on npu memory.

npu memory is host memory, so the kernels Inductor writes for cpu tensors
(C++/OpenMP, vectorised) run unchanged on npu buffers; npudist writes no code
generator. What differs from cpu:

- buffers: the wrapper allocates with ``empty_strided(..., device='npu:N')``,
  i.e. from the npu caching allocator (``torch.npu.memory_allocated`` sees them);
- stream order: generated kernels are called directly, outside the
  dispatcher, so before each one the wrapper makes the check every eager npu op
  makes (``npudist._C._wait_current_stream``): a collective pending on the
  current stream completes before a kernel reads its output;
- Inductor 2.13 decides some things from the device type alone: kernels are
  generated with the graph's current device set to cpu (so the C++ kernel
  sees the "cpp" backend it was written for), and while an npu graph is
  scheduled the loop reordering/reindexing passes are set as they are for cpu
  (``npudist.graph.compile.config``).

Reference behaviour: ``torch._inductor.codegen.cpp.CppScheduling`` and
``PythonWrapperCodegen`` for cpu.
"""
from __future__ import annotations

import contextlib
import warnings
import weakref

import torch
from torch._inductor import config as inductor_config
from torch._inductor.codegen.cpp import CppScheduling
from torch._inductor.codegen.wrapper import PythonWrapperCodegen, SubgraphPythonWrapperCodegen
from torch._inductor.virtualized import V

from npudist.graph.compile import config as npu_config

_CPU = torch.device("cpu")

REDUCE_OVERHEAD_MESSAGE = (
    "torch.compile(mode='reduce-overhead') on npu: Inductor applies graph replay (CUDA graph trees) "
    "to cuda devices only and offers no hook through which another device supplies its graphs, so "
    "this graph is compiled by Inductor and runs without graph replay. For graph replay on npu use "
    "torch.compile(backend='npugraphs') (Inductor, then replay through torch.npu.NPUGraph)."
)
# Dynamo tracing contexts already warned for: a frame's forward and its (lazily compiled)
# backward share one, so a training step warns once
_warned_contexts: weakref.WeakSet = weakref.WeakSet()
# the wrapper whose npu config scope is open (at most one: compiles of a thread are sequential)
_open_scope_owner: NPUWrapperCodegen | None = None


def _warn_reduce_overhead() -> None:
    """One UserWarning per compiled frame when mode='reduce-overhead' asked for graph replay."""
    if not inductor_config.triton.cudagraphs:
        return
    from torch._guards import TracingContext

    context = TracingContext.try_get()
    if context is not None:
        if context in _warned_contexts:
            return
        _warned_contexts.add(context)
    warnings.warn(REDUCE_OVERHEAD_MESSAGE, UserWarning, stacklevel=2)


class NPUScheduling(CppScheduling):
    """``CppScheduling`` for npu graphs: C++ kernels over npu (host) memory.

    Kernels are generated with the graph's current device set to cpu (the C++
    generator reads the device to pick its backend), and each generated
    kernel call is preceded by the current-stream wait (see module docstring).
    """

    def codegen_node(self, node):
        with V.graph.set_current_device(_CPU):
            return super().codegen_node(node)

    def codegen_template(self, template_node, epilogue_nodes, prologue_nodes):
        with V.graph.set_current_device(_CPU):
            return super().codegen_template(template_node, epilogue_nodes, prologue_nodes)

    def flush(self):
        nodes = self.kernel_group.scheduled_nodes
        if nodes and npu_config.wait_for_stream:
            device = nodes[0].get_device()
            index = device.index if device is not None and device.index is not None else -1
            V.graph.wrapper_code.writeline(f"npu_wait_current_stream({index})")
        with V.graph.set_current_device(_CPU):
            return super().flush()


class NPUWrapperCodegen(PythonWrapperCodegen):
    """Python wrapper for npu graphs.

    While the graph is scheduled and generated, the ``torch._inductor.config``
    values listed in ``npudist.graph.compile.config._SCHEDULER_OVERRIDES``
    take npu's values (entered when Inductor creates the wrapper, right before
    it builds the scheduler; left when the wrapper's code is generated).
    """

    def __init__(self):
        super().__init__()
        self._config_scope: contextlib.ExitStack | None = None

    @staticmethod
    def create(is_subgraph, subgraph_name, parent_wrapper, partition_signatures=None):
        if is_subgraph:
            # kernels of a subgraph are written into the parent wrapper's code
            return SubgraphPythonWrapperCodegen(subgraph_name, parent_wrapper, partition_signatures)
        _warn_reduce_overhead()
        wrapper = NPUWrapperCodegen()
        wrapper._enter_npu_config()
        return wrapper

    def _enter_npu_config(self) -> None:
        global _open_scope_owner
        if _open_scope_owner is not None:  # a compile that failed before generate()
            _open_scope_owner._exit_npu_config()
        overrides = {name: getattr(npu_config, name) for name in npu_config._SCHEDULER_OVERRIDES}
        scope = contextlib.ExitStack()
        scope.enter_context(inductor_config.patch(overrides))
        self._config_scope = scope
        _open_scope_owner = self

    def _exit_npu_config(self) -> None:
        global _open_scope_owner
        scope, self._config_scope = getattr(self, "_config_scope", None), None
        if _open_scope_owner is self:
            _open_scope_owner = None
        if scope is not None:
            scope.close()

    def write_header(self) -> None:
        super().write_header()
        self.header.writeline("from npudist._C import _wait_current_stream as npu_wait_current_stream")
        self.header.writeline("from npudist.graph.compile._kernels import npu_cpp_pybinding")

    def codegen_cuda_stream_enter(self, stream_idx: int):
        # Inductor defines the stream objects of a multi-stream graph (user streams traced by
        # Dynamo: torch.accelerator.current_stream(), torch.Stream, with-stream blocks) when it
        # enters a device guard, which it emits for GPU device types only; npu takes no guard
        # (compute is synchronous), so the npu wrapper defines them before the first stream block.
        if not getattr(self, "_npu_streams_defined", False):
            self._npu_streams_defined = True
            self._codegen_stream_objects()
        return super().codegen_cuda_stream_enter(stream_idx)

    def _codegen_stream_objects(self) -> None:
        from torch._inductor.stream_utils import DEFAULT_STREAM, get_stream_name

        scheduler = V.graph.scheduler
        streams = max(scheduler.node_to_stream.values(), default=0)
        line = "from torch._dynamo.graph_bytecode_inputs import get_external_object_by_index"
        if streams and not self.imports.contains(line):
            self.imports.writeline(line)
        self.writeline(f"{DEFAULT_STREAM} = torch.npu.current_stream()")
        for idx in range(1, streams + 1):
            user_obj = scheduler.stream_idx_to_user_obj_idx[idx]
            self.writeline(f"{get_stream_name(idx)} = get_external_object_by_index({user_obj})")

    def define_kernel(self, kernel_name, kernel_body, metadata=None, gpu=True, cpp_definition=None):
        # C++ kernels are launched through npudist's capturable launcher (_kernels.py)
        if npu_config.capturable_kernels and not gpu and kernel_body.lstrip().startswith("async_compile.cpp_pybinding("):
            kernel_body = kernel_body.replace("async_compile.cpp_pybinding(", "npu_cpp_pybinding(async_compile, ", 1)
        return super().define_kernel(kernel_name, kernel_body, metadata, gpu, cpp_definition)

    def generate(self, is_inference):
        try:
            return super().generate(is_inference)
        finally:
            self._exit_npu_config()
