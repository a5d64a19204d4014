"""Graph capture and replay on npu: ``torch.npu.NPUGraph``, ``torch.npu.graph``,
``torch.npu.graph_pool_handle``, ``torch.npu.make_graphed_callables``,
``torch.npu.is_current_stream_capturing`` (torch.cuda's graph API).

One C++ implementation (csrc/core/graph, registered as PyTorch's "NPU"
``at::GraphImplInterface``) serves both ``NPUGraph`` and
``torch.accelerator.Graph``: while a stream captures, the npu kernels issued
on it (by any thread, e.g. autograd's) and on streams forked from it are
recorded instead of run; replay runs them from C++. See docs/graph.md.
"""
from __future__ import annotations

import gc

import torch
from torch.utils import _pytree

from npudist import _C

_MODES = ("global", "thread_local", "relaxed")


def is_current_stream_capturing() -> bool:
    """True if the current npu stream of the current device is capturing a graph
    (torch.cuda.is_current_stream_capturing)."""
    return torch.npu.current_stream().is_capturing()


def graph_pool_handle() -> tuple[int, int]:
    """A new memory-pool id that several graphs may share: pass it as ``pool=``
    to ``capture_begin`` / ``torch.npu.graph`` (torch.cuda.graph_pool_handle)."""
    return _C._graph_pool_handle()


class NPUGraph(torch._C._acceleratorGraph):
    """An npu graph (torch.cuda.CUDAGraph's API; the same C++ object as
    ``torch.accelerator.Graph`` on npu).

    Args:
        keep_graph: if False (default) the graph is made executable at
            ``capture_end``; if True, at ``instantiate()`` or the first
            ``replay()``.

    Methods: ``capture_begin(pool=None, capture_error_mode="global")``,
    ``capture_end()``, ``instantiate()``, ``replay()``, ``reset()``,
    ``pool()``, ``enable_debug_mode()``, ``debug_dump(path)`` (Graphviz text).
    Errors (RuntimeError, naming the op; the capture is invalidated): see
    docs/graph.md, "Errors".
    """

    def __new__(cls, keep_graph: bool = False):
        return super().__new__(cls, keep_graph)

    def __init__(self, keep_graph: bool = False):
        super().__init__(keep_graph)

    def capture_begin(self, pool: tuple[int, int] | None = None, capture_error_mode: str = "global") -> None:
        """Begins capturing npu work on the current stream (which must not be the
        default stream). Prefer ``torch.npu.graph`` / ``make_graphed_callables``.

        Args:
            pool: a pool id from ``graph_pool_handle()`` or another graph's
                ``pool()``: the graphs share that memory pool.
            capture_error_mode: "global" (unsafe calls from any thread fail),
                "thread_local" (only from this thread), "relaxed" (only calls
                that conflict with the capture itself fail).
        """
        if capture_error_mode not in _MODES:
            raise ValueError(f"capture_error_mode must be one of {_MODES}, got {capture_error_mode!r}")
        super().capture_begin(pool=pool, capture_error_mode=capture_error_mode)

    def capture_end(self) -> None:
        """Ends the capture (on the capturing stream). Raises if the capture was
        invalidated or a forked stream was not joined back; the capture is then
        discarded and the graph can capture again."""
        super().capture_end()

    def replay(self) -> None:
        """Runs the captured work once, on the captured addresses, from C++."""
        super().replay()

    def reset(self) -> None:
        """Drops the captured graph and its hold on the memory pool."""
        super().reset()

    def pool(self) -> tuple[int, int]:
        """This graph's memory-pool id (pass it to another capture to share the pool)."""
        return super().pool()


class graph:
    """Context manager capturing the block into ``npu_graph`` (torch.cuda.graph).

    On entry: synchronizes, collects garbage, empties the cache, makes
    ``stream`` (default: a side stream shared by all ``graph`` contexts of the
    device) current and calls ``capture_begin``; on exit: ``capture_end`` and
    the previous stream again.

    Args:
        npu_graph: the ``NPUGraph`` (or ``torch.accelerator.Graph``) to capture into.
        pool: pool id to share (``graph_pool_handle()`` or ``other.pool()``).
        stream: the capture stream (must not be the default stream).
        capture_error_mode: "global" | "thread_local" | "relaxed".
    """

    _default_streams: dict[int, torch.Stream] = {}

    def __init__(self, npu_graph, pool=None, stream=None, capture_error_mode: str = "global"):
        device = torch.npu.current_device()
        if stream is None:
            stream = self._default_streams.get(device)
            if stream is None:
                stream = self._default_streams[device] = torch.npu.Stream(device)
        self.npu_graph = npu_graph
        self.pool = pool
        self.capture_stream = stream
        self.capture_error_mode = capture_error_mode
        self._stream_ctx = torch.npu.stream(stream)

    def __enter__(self):
        torch.npu.synchronize()
        gc.collect()
        torch.npu.empty_cache()
        self._stream_ctx.__enter__()
        try:
            if isinstance(self.npu_graph, NPUGraph):
                self.npu_graph.capture_begin(self.pool, capture_error_mode=self.capture_error_mode)
            else:
                torch._C._acceleratorGraph.capture_begin(
                    self.npu_graph, pool=self.pool, capture_error_mode=self.capture_error_mode
                )
        except BaseException:
            self._stream_ctx.__exit__(None, None, None)
            raise

    def __exit__(self, exc_type, exc, tb):
        try:
            if exc_type is None:
                torch._C._acceleratorGraph.capture_end(self.npu_graph)
            else:
                # The block raised: end and drop the partial capture, so the
                # block's own error is what the caller sees.
                try:
                    torch._C._acceleratorGraph.capture_end(self.npu_graph)
                except RuntimeError:
                    pass
                torch._C._acceleratorGraph.reset(self.npu_graph)
        finally:
            self._stream_ctx.__exit__(exc_type, exc, tb)
        return False


def make_graphed_callables(
    callables,
    sample_args,
    num_warmup_iters: int = 3,
    allow_unused_input: bool = False,
    pool: tuple[int, int] | None = None,
):
    """Graphed versions of callables (torch.cuda.make_graphed_callables).

    Each callable (function or ``nn.Module``) is captured twice, forward and
    backward, after ``num_warmup_iters`` warm-up iterations on a side stream;
    all graphs share one memory pool (``pool`` or a new one). The result runs
    the forward graph in its autograd forward and the backward graph in its
    backward: inputs are copied into the captured (static) inputs, outputs
    are the captured outputs (overwritten by the next call).

    Args:
        callables: a callable or a tuple of them, captured in order (their
            backward graphs in reverse order, as they will run).
        sample_args: a tuple of tensors per callable (a tuple of such tuples
            when ``callables`` is a tuple).
        num_warmup_iters: eager iterations before capture (lazy state, e.g.
            ``.grad`` and optimizer state, must exist before capture).
        allow_unused_input: passed to ``torch.autograd.grad``.
        pool: memory pool id to capture into.

    Returns the graphed callable(s). A module keeps its class; its
    ``forward`` is replaced by the graphed one while ``module.training``
    matches the training state at capture (otherwise the eager forward runs).

    Raises:
        TypeError: sample args that are not tensors.
        RuntimeError: modules with hooks registered, or a module whose
            parameters need grad while capture is in no_grad mode.
    """
    if torch.is_autocast_enabled() and torch.is_autocast_cache_enabled():
        raise RuntimeError(
            "make_graphed_callables does not support the autocast cache; "
            "use autocast(..., cache_enabled=False)"
        )
    just_one = False
    if not isinstance(callables, tuple):
        just_one = True
        callables = (callables,)
        sample_args = (sample_args,)

    flat_args = []
    for c, args in zip(callables, sample_args):
        if isinstance(c, torch.nn.Module):
            if c._backward_hooks or c._forward_hooks or c._forward_pre_hooks:
                raise RuntimeError(
                    "make_graphed_callables: modules must have no hooks registered when captured "
                    f"({type(c).__name__} has some); register them after capture"
                )
            if any(b.requires_grad for b in c.buffers()):
                raise RuntimeError("make_graphed_callables: module buffers must not require grad")
        flat, _ = _pytree.tree_flatten(args)
        if not all(isinstance(a, torch.Tensor) for a in flat):
            raise TypeError("make_graphed_callables: sample_args must contain only tensors (pytrees of tensors)")
        flat_args.append(tuple(flat))

    per_callable_static_inputs = []
    for c, flat in zip(callables, flat_args):
        params = tuple(c.parameters()) if isinstance(c, torch.nn.Module) else ()
        per_callable_static_inputs.append(flat + params)

    mempool = graph_pool_handle() if pool is None else pool
    n = len(callables)
    fwd_graphs = [NPUGraph() for _ in range(n)]
    bwd_graphs = [NPUGraph() for _ in range(n)]

    def grad_targets(static_inputs):
        return tuple(i for i in static_inputs if i.requires_grad)

    # Warm-up on a side stream (lazy initialisations happen outside capture).
    torch.npu.synchronize()
    side = torch.npu.Stream()
    side.wait_stream(torch.npu.current_stream())
    with torch.npu.stream(side):
        for c, args, static_inputs in zip(callables, sample_args, per_callable_static_inputs):
            for _ in range(num_warmup_iters):
                outputs, _ = _pytree.tree_flatten(c(*args))
                outs = tuple(o for o in outputs if isinstance(o, torch.Tensor) and o.requires_grad)
                targets = grad_targets(static_inputs)
                if outs and targets:
                    torch.autograd.grad(
                        outs,
                        targets,
                        grad_outputs=tuple(torch.empty_like(o) for o in outs),
                        only_inputs=True,
                        allow_unused=allow_unused_input,
                    )
            del outputs
    torch.npu.current_stream().wait_stream(side)
    torch.npu.synchronize()

    # Forward graphs, in order.
    fwd_outputs = []
    fwd_specs = []
    for c, args, g in zip(callables, sample_args, fwd_graphs):
        with graph(g, pool=mempool):
            out = c(*args)
        flat_out, spec = _pytree.tree_flatten(out)
        fwd_outputs.append(tuple(flat_out))
        fwd_specs.append(spec)

    # Backward graphs, in reverse order (the order backward will run in).
    static_grad_outputs_all = [None] * n
    static_grad_inputs_all = [None] * n
    for i in reversed(range(n)):
        g = bwd_graphs[i]
        static_inputs = per_callable_static_inputs[i]
        outs = fwd_outputs[i]
        static_grad_outputs = tuple(
            torch.empty_like(o) if isinstance(o, torch.Tensor) and o.requires_grad else None for o in outs
        )
        needing = tuple(o for o in outs if isinstance(o, torch.Tensor) and o.requires_grad)
        targets = grad_targets(static_inputs)
        with graph(g, pool=mempool):
            if needing and targets:
                grads = torch.autograd.grad(
                    needing,
                    targets,
                    grad_outputs=tuple(go for go in static_grad_outputs if go is not None),
                    only_inputs=True,
                    allow_unused=allow_unused_input,
                )
            else:
                grads = ()
        it = iter(grads)
        static_grad_inputs = tuple(next(it) if inp.requires_grad else None for inp in static_inputs)
        static_grad_outputs_all[i] = static_grad_outputs
        static_grad_inputs_all[i] = static_grad_inputs

    def make_function(i):
        fwd_graph, bwd_graph = fwd_graphs[i], bwd_graphs[i]
        static_inputs = per_callable_static_inputs[i]
        static_outputs = fwd_outputs[i]
        static_grad_outputs = static_grad_outputs_all[i]
        static_grad_inputs = static_grad_inputs_all[i]
        n_user = len(flat_args[i])
        spec = fwd_specs[i]

        class Graphed(torch.autograd.Function):
            @staticmethod
            def forward(ctx, *inputs):
                for k in range(n_user):
                    if static_inputs[k].data_ptr() != inputs[k].data_ptr():
                        static_inputs[k].copy_(inputs[k])
                fwd_graph.replay()
                return tuple(o.detach() if isinstance(o, torch.Tensor) else o for o in static_outputs)

            @staticmethod
            @torch.autograd.function.once_differentiable
            def backward(ctx, *grads):
                for g_out, grad in zip(static_grad_outputs, grads):
                    if g_out is not None and grad is not None and g_out.data_ptr() != grad.data_ptr():
                        g_out.copy_(grad)
                bwd_graph.replay()
                return tuple(g.detach() if g is not None else None for g in static_grad_inputs)

        def functionalized(*user_args):
            flat, _ = _pytree.tree_flatten(user_args)
            out = Graphed.apply(*(tuple(flat) + static_inputs[n_user:]))
            return _pytree.tree_unflatten(list(out), spec)

        return functionalized

    results = []
    for i, c in enumerate(callables):
        fn = make_function(i)
        if isinstance(c, torch.nn.Module):

            def make_forward(module, graph_training_state, graphed, orig_fwd):
                def forward(*args, **kwargs):
                    if module.training == graph_training_state and not kwargs:
                        return graphed(*args)
                    return orig_fwd(*args, **kwargs)

                return forward

            c.forward = make_forward(c, c.training, fn, c.forward)
            results.append(c)
        else:
            results.append(fn)
    return results[0] if just_one else tuple(results)


def _check_capturable_step(optimizer, args, kwargs) -> None:
    """Optimizer step pre-hook: a step during npu graph capture needs
    ``capturable=True`` (torch's own check covers only cuda/xpu)."""
    try:
        capturing = is_current_stream_capturing()
    except Exception:
        return
    if not capturing:
        return
    groups = optimizer.param_groups
    if any("capturable" not in g for g in groups):
        raise RuntimeError(
            f"npu graph capture of {type(optimizer).__name__}.step(): this optimizer has no capturable "
            "mode, so its step reads host values and cannot be captured; step it outside the graph"
        )
    if not all(g["capturable"] for g in groups):
        raise RuntimeError(
            f"Attempting NPU graph capture of step() for an instance of {type(optimizer).__name__} but "
            "param_groups' capturable is False; construct it with capturable=True"
        )


_hook_handle = None


def install_optimizer_check() -> None:
    """Registers the capturable check with torch.optim's global step pre-hooks (once)."""
    global _hook_handle
    if _hook_handle is None:
        from torch.optim.optimizer import register_optimizer_step_pre_hook

        _hook_handle = register_optimizer_step_pre_hook(_check_capturable_step)
