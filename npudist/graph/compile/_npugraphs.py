"""``torch.compile(backend="npugraphs")``: Inductor's compiled code replayed through npu graphs.

The backend compiles exactly as ``backend="inductor"`` (``compile_fx``: AOTAutograd,
Inductor's C++ kernels on npu memory), and wraps each compiled forward,
backward and inference graph in an :class:`NPUGraphRunner`, which replays it
through ``torch.npu.NPUGraph`` (torch_npu's backend name; the design follows
the CUDA-graph wrappers of PyTorch's ``cudagraphs`` backend and Inductor's
``mode="reduce-overhead"``, simplified):

- **Static inputs.** Parameters and buffers (Inductor's ``static_input_idxs``
  for a forward; for a backward, the inputs that are those same parameters)
  are used in place: the graph reads their memory, so in-place optimizer
  updates are seen by the next replay. If a static input arrives at another
  address, the graph is recorded again. Every other tensor input is copied
  into a static buffer the graph owns before each replay (skipped when it is
  that buffer already).
- **Warm-up, capture, replay.** The first call with a given set of integer
  inputs (dynamic sizes) runs the compiled code without a graph (warm-up:
  lazy initialisation happens outside capture); the second captures and
  replays; later calls replay. Each distinct set of integer inputs gets its
  own graph (at most ``MAX_GRAPHS_PER_FUNCTION``; beyond that the compiled
  code runs without graphs).
- **Outputs** are new tensors over the graph's output memory: valid until the
  next replay of the same compiled graph overwrites them, as with CUDA graphs
  (``loss = model(x)`` twice: the first ``loss`` tensor now holds the second
  value). Clone what must survive.
- **Safety, never wrong gradients.** Before a forward replay, the activations
  the previous replay saved for backward must be dead (its backward ran, or
  its autograd graph was dropped); before a backward replay, the gradients
  it returned last time must be dead (``zero_grad()`` sets them to None).
  Otherwise the call runs the compiled code without a graph, writing fresh
  memory (correct, slower; counted in ``NPUGraphRunner.stats["fallback"]``
  and reported once with a UserWarning).
- Inputs the graph mutates are copied back to the caller's tensors.

Limits: one npu device per graph; the compiled code must be capturable (no
host reads, no data-dependent shapes; see docs/graph.md "Errors") — a graph
that cannot be captured runs without graphs after one UserWarning naming the
reason.
"""
from __future__ import annotations

import functools
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch._dynamo.utils import counters

from npudist import _C

#: Largest number of graphs one compiled function keeps (one per distinct set of integer inputs).
MAX_GRAPHS_PER_FUNCTION = 8


class _Recorded:
    """One captured graph of a compiled function and the buffers it reads and writes."""

    __slots__ = (
        "graph", "static_idxs", "static_ptrs", "copy_idxs", "buffers", "copy_back",
        "outputs", "tensor_out", "protected", "baseline",
    )


class NPUGraphRunner:
    """Boxed callable (a list of inputs in, a list of outputs out) replaying one
    compiled graph through npu graphs; see the module docstring.

    Args:
        compiled: Inductor's compiled graph (boxed call).
        kind: "forward", "backward" or "inference".
        static_input_idxs: inputs used in place (parameters, buffers).
        mutated_input_idxs: inputs the graph writes.
        protected_output_idxs: outputs that must be dead before the next
            replay (saved activations, gradients); None: none.
        pair: shared with the backward of the same compile (it learns which
            of its inputs are the forward's parameters).
    """

    def __init__(self, compiled: Callable, kind: str, static_input_idxs: Sequence[int],
                 mutated_input_idxs: Sequence[int], protected_output_idxs: Sequence[int] | None,
                 pair: dict):
        self._boxed_call = True  # an instance attribute: wrappers copy __dict__
        self.compiled = compiled
        self.kind = kind
        self.static_input_idxs = tuple(sorted(set(static_input_idxs)))
        self.mutated_input_idxs = tuple(sorted(set(mutated_input_idxs)))
        self.protected_output_idxs = None if protected_output_idxs is None else tuple(protected_output_idxs)
        self.pair = pair
        self._int_idxs: tuple[int, ...] | None = None
        self._records: dict[tuple, _Recorded | None] = {}
        self._disabled: str | None = None
        self._warned_fallback = False
        #: counters: warm-up runs, captures, replays, fallback runs (no graph); the process-wide
        #: sums are in torch._dynamo.utils.counters["npugraphs"]
        self.stats = {"warmup": 0, "capture": 0, "replay": 0, "fallback": 0}
        if kind == "forward":
            pair["forward"] = self

    # -- the call -----------------------------------------------------------------
    def __call__(self, args: list) -> Any:
        if self._disabled is not None:
            return self._run_eager(args)
        if self._int_idxs is None:
            self._int_idxs = tuple(i for i, a in enumerate(args) if not isinstance(a, torch.Tensor))
            if self.kind == "forward":
                self.pair["param_ptrs"] = {args[i].data_ptr() for i in self.static_input_idxs
                                           if isinstance(args[i], torch.Tensor)}
        key = tuple(args[i] for i in self._int_idxs)
        if key not in self._records:
            if len(self._records) >= MAX_GRAPHS_PER_FUNCTION:
                self._disable(f"more than {MAX_GRAPHS_PER_FUNCTION} distinct input sizes")
                return self._run_eager(args)
            self._records[key] = None  # warmed up
            self._count("warmup")
            return self.compiled(args)
        rec = self._records[key]
        if rec is not None:
            for i, p in zip(rec.static_idxs, rec.static_ptrs):
                if args[i].data_ptr() != p:  # a parameter moved: record again
                    rec = None
                    break
        if rec is None:
            try:
                rec = self._record(args)
            except Exception as err:  # not capturable: run without graphs from now on
                self._disable(f"{type(err).__name__}: {err}")
                return self._run_eager(args)
            self._records[key] = rec
        elif rec.protected and any(n > b for n, b in zip(_C._storage_use_counts(rec.protected), rec.baseline)):
            self._fallback()
            return self.compiled(args)
        return self._replay(rec, args)

    def _replay(self, rec: _Recorded, args: list) -> list:
        if rec.copy_idxs:
            _C._copy_inputs(rec.buffers, [args[i] for i in rec.copy_idxs])
        rec.graph.replay()
        for i, buf in rec.copy_back:
            args[i].copy_(buf)
        self._count("replay")
        fresh = _C._fresh_aliases(rec.tensor_out)
        args.clear()
        if len(fresh) == len(rec.outputs):
            return fresh
        out = list(rec.outputs)
        k = 0
        for j, o in enumerate(out):
            if isinstance(o, torch.Tensor):
                out[j] = fresh[k]
                k += 1
        return out

    # -- recording ------------------------------------------------------------------
    def _record(self, args: list) -> _Recorded:
        rec = _Recorded()
        static = set(self.static_input_idxs)
        if self.kind == "backward":  # the forward's parameters, read in place
            ptrs = self.pair.get("param_ptrs", set())
            static = {i for i, a in enumerate(args) if isinstance(a, torch.Tensor) and a.data_ptr() in ptrs}
        devices = {a.device for a in args if isinstance(a, torch.Tensor) and a.device.type == "npu"}
        if len(devices) > 1:
            raise RuntimeError(f"inputs on several npu devices ({sorted(map(str, devices))})")
        device = devices.pop() if devices else torch.device("npu", torch.npu.current_device())
        rec.static_idxs = tuple(i for i in sorted(static) if isinstance(args[i], torch.Tensor))
        rec.static_ptrs = tuple(args[i].data_ptr() for i in rec.static_idxs)
        rec.copy_idxs = tuple(i for i, a in enumerate(args) if isinstance(a, torch.Tensor) and i not in static)
        inputs = list(args)
        buffers = []
        for i in rec.copy_idxs:
            a = args[i]
            buf = torch.empty_strided(a.shape, a.stride(), dtype=a.dtype, device=a.device)
            buf.copy_(a)
            inputs[i] = buf
            buffers.append(buf)
        rec.buffers = buffers
        pos = {i: k for k, i in enumerate(rec.copy_idxs)}
        rec.copy_back = tuple((i, buffers[pos[i]]) for i in self.mutated_input_idxs if i in pos)
        graph = torch.npu.NPUGraph()
        with torch.npu.device(device), torch.npu.graph(graph):
            outputs = self.compiled(inputs)
        del inputs
        rec.graph = graph
        rec.outputs = tuple(outputs) if isinstance(outputs, (list, tuple)) else (outputs,)
        rec.tensor_out = [o for o in rec.outputs if isinstance(o, torch.Tensor)]
        if self.protected_output_idxs is None:
            protected = []
        else:
            # outputs that are parameters (static inputs) are not the graph's memory: never overwritten
            params = {args[i].untyped_storage().data_ptr() for i in rec.static_idxs}
            protected = [rec.outputs[j] for j in self.protected_output_idxs
                         if j < len(rec.outputs) and isinstance(rec.outputs[j], torch.Tensor)
                         and rec.outputs[j].untyped_storage().data_ptr() not in params]
        rec.protected = protected
        rec.baseline = _C._storage_use_counts(protected)
        self._count("capture")
        return rec

    def _count(self, what: str) -> None:
        self.stats[what] += 1
        counters["npugraphs"][what] += 1

    # -- without graphs ----------------------------------------------------------------
    def _run_eager(self, args: list) -> Any:
        self._count("fallback")
        return self.compiled(args)

    def _fallback(self) -> None:
        self._count("fallback")
        if not self._warned_fallback:
            self._warned_fallback = True
            what = "activations saved by the previous forward replay (its backward has not run)" \
                if self.kind == "forward" else "gradients returned by the previous backward replay"
            warnings.warn(
                f"npugraphs: the {what} are still in use, so this {self.kind} runs without graph replay "
                "(correct, slower). Run backward before the next forward, and let zero_grad() set gradients "
                "to None, to keep replaying.",
                UserWarning,
                stacklevel=3,
            )

    def _disable(self, reason: str) -> None:
        self._disabled = reason
        self._records.clear()
        warnings.warn(
            f"npugraphs: a compiled {self.kind} graph runs without npu graph replay from now on: {reason}",
            UserWarning,
            stacklevel=3,
        )


def _mutated_inputs(compiled: Any, gm: torch.fx.GraphModule | None) -> Sequence[int]:
    idxs = getattr(compiled, "mutated_input_idxs", None)
    if idxs is not None:
        return tuple(idxs)
    from torch._dynamo.backends.cudagraphs import find_input_mutations

    return tuple(find_input_mutations(gm.graph)) if gm is not None else ()


def _protected_outputs(gm: torch.fx.GraphModule, kind: str) -> Sequence[int] | None:
    from torch._inductor.utils import output_node

    outputs = output_node(gm).args[0]
    n = len(outputs) if isinstance(outputs, (list, tuple)) else 1
    if kind == "backward":
        return tuple(range(n))
    if kind == "inference":
        return None
    visible = set(output_node(gm).meta.get("user_visible_output_idxs", ()))
    return tuple(j for j in range(n) if j not in visible)


def _inner_compile(gm: torch.fx.GraphModule, example_inputs: Sequence[Any], *, pair: dict, **kwargs: Any) -> Any:
    from torch._inductor.compile_fx import compile_fx_inner

    if kwargs.get("is_backward"):
        kind = "backward"
    elif kwargs.get("is_inference"):
        kind = "inference"
    else:
        kind = "forward"
    protected = _protected_outputs(gm, kind)
    mutation_gm = gm if getattr(gm, "graph", None) is not None else None
    compiled = compile_fx_inner(gm, example_inputs, **kwargs)
    if not any(isinstance(a, torch.Tensor) and a.device.type == "npu" for a in example_inputs):
        return compiled  # no npu inputs: nothing to replay on npu
    static = kwargs.get("static_input_idxs") or ()
    runner = NPUGraphRunner(compiled, kind, static if kind != "backward" else (),
                            _mutated_inputs(compiled, mutation_gm), protected, pair)
    return runner


def npugraphs(gm: torch.fx.GraphModule, example_inputs: Sequence[Any], **kwargs: Any) -> Callable:
    """The ``npugraphs`` Dynamo backend (``torch.compile(backend="npugraphs")``):
    Inductor's compile, then replay through ``torch.npu.NPUGraph`` (module docstring).

    Inductor's AOTAutograd cache is bypassed for these compiles (its entries
    hold Inductor's own compiled graphs, not the npu graph wrappers); Inductor's
    FX graph cache and kernel cache still apply.
    """
    from torch._inductor.compile_fx import compile_fx

    if kwargs:
        raise TypeError(f"backend 'npugraphs' takes no options, got {sorted(kwargs)}")
    pair: dict = {}
    with torch._functorch.config.patch(enable_autograd_cache=False):
        return compile_fx(gm, example_inputs, inner_compile=functools.partial(_inner_compile, pair=pair))
