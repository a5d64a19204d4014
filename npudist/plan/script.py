"""Capturing an unmodified npurun script: ``python -m npudist.plan capture`` (docs/plan.md, "Capturing a script").

:func:`capture_script` runs the script the user launches with npurun, in this process, as one rank of the
logical job, until one training step has been recorded, and returns that step's trace
(npudist.plan.capture's format). What it changes around the script, and why:

- environment: ``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK``, ``LOCAL_WORLD_SIZE``, ``GROUP_RANK`` as npurun sets
  them; ``MASTER_ADDR``/``MASTER_PORT`` point at a TCPStore this process serves and
  ``TORCHELASTIC_USE_AGENT_STORE=True`` makes torch's ``env://`` rendezvous a client of it (a rank-0
  TCPStore would wait for the other ``WORLD_SIZE - 1`` ranks); ``NPUDIST_DEVICE_COUNT`` is the node's
  npus, so ``torch.npu.set_device(LOCAL_RANK)`` works without the devices (launch checks skipped);
- process groups: npudist's hccl registration hands out torch's ``FakeProcessGroup`` (npudist.hccl's
  capture hook; the pipeline group of a multi-stage capture is real, npudist.plan.pipeline_group), so
  ``init_process_group("hccl")``, ``new_group`` and DeviceMesh reach the logical world size without peers;
  collectives return at once;
- tensors (:class:`CaptureMode`, a TorchDispatchMode): npu tensors are FakeTensors (shapes, dtypes,
  strides, no memory): factories on npu, copies to npu, anything computed from a fake tensor or from
  a meta one onto npu. Ops on real cpu tensors run for real (DeviceMesh's rank tables, cpu data);
  npudist.xp's arrays stay real (the job's data pipeline: host data, small);
- host reads of fake values (``.item()``, ``.tolist()``, ``float(t)``, ``bool(t)``, formatting a
  loss) return a placeholder (0, 0.0, False) and are listed, with the user's line, in one warning;
- data-dependent output shapes (``nonzero``, ``unique``, ``masked_select``, boolean indexing) raise
  :class:`CaptureError` naming the op and the user's file:line;
- the step boundary is ``npudist.profiler.step()`` (npudist.profiler's capture hook) or
  ``optimizer.step()`` (torch's global optimizer post-hook); ``warmup_steps`` steps run unrecorded
  (lazy optimizer state, FSDP2's lazy init), the next one is recorded, then the script is stopped.

Memory: at the recorded step's start every live npu storage (found by a gc scan: parameters, optimizer
state, FSDP2's unsharded buffers) is the baseline and is tracked for frees and resizes from then on
(npudist.plan.capture.StepRecorder).

Limits (docs/plan.md): modules built on cpu and moved with ``.to("npu")`` become fake (their cpu copy
is real memory on this host: build big models on meta or npu); a fake module cannot be moved with
``.to(dtype)`` in torch 2.13 (``nn.Module._apply`` cannot swap fake parameters: "Couldn't swap"):
:class:`CaptureError` names the line and says to build the module in its final dtype. Pipelines: one
capture per stage, all at once (``pipeline_ranks``): the pipeline group is real for real tensors
(npudist.plan.pipeline_group) and the npu tensors of torch's warm-up vote and shape exchange are kept real, so
the stages' values travel; a stage captured alone has its vote answered STATIC (the one read not answered with
0), so it needs static metadata (``PipelineStage(input_args=, output_args=)``); docs/plan.md, "Pipeline
parallelism".
Host time (Python between ops) is not recorded.
"""
from __future__ import annotations

import dataclasses
import gc
import os
import runpy
import sys
import warnings

import torch
from torch._subclasses.fake_tensor import (
    DataDependentOutputException,
    DynamicOutputShapeException,
    FakeTensor,
    FakeTensorMode,
)
from torch.optim.optimizer import register_optimizer_step_post_hook
from torch.utils._python_dispatch import TorchDispatchMode

from npudist import _env
from npudist.plan.capture import StepRecorder

__all__ = ["CaptureError", "CaptureMode", "CapturedStep", "HostReadWarning", "capture_script"]

_aten = torch.ops.aten
_TORCH_DIR = os.path.dirname(os.path.abspath(torch.__file__))
_NPUDIST_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_XP_DIR = os.path.join(_NPUDIST_DIR, "xp")
_STDLIB_DIR = os.path.dirname(os.path.abspath(os.__file__))
# host reads: the op returns a Python value computed from tensor data
_HOST_READS = {_aten._local_scalar_dense.default, _aten.is_nonzero.default, _aten.equal.default}
_RECV = torch.ops.c10d.recv_.default


class CaptureError(RuntimeError):
    """The script cannot be captured; the message names the op or step and the user's file:line."""


class HostReadWarning(UserWarning):
    """The captured script read values of fake tensors; it got placeholders (listed in the message)."""


class _StopScript(BaseException):
    """Ends the script once the step is recorded (a BaseException: the script's ``except Exception`` lets it
    through)."""


def _is_user(filename: str) -> bool:
    fn = os.path.abspath(filename)
    return not fn.startswith((_TORCH_DIR, _NPUDIST_DIR, _STDLIB_DIR)) and "site-packages" not in fn \
        and not filename.startswith("<")


def user_line() -> str:
    """``file:line`` of the innermost frame outside torch, npudist and the standard library (the user's code)."""
    f = sys._getframe(1)
    while f is not None:
        if _is_user(f.f_code.co_filename):
            return f"{os.path.abspath(f.f_code.co_filename)}:{f.f_lineno}"
        f = f.f_back
    return "<unknown>"


def _user_line_of(exc: BaseException) -> str:
    where, tb = "<unknown>", exc.__traceback__
    while tb is not None:
        if _is_user(tb.tb_frame.f_code.co_filename):
            where = f"{os.path.abspath(tb.tb_frame.f_code.co_filename)}:{tb.tb_lineno}"
        tb = tb.tb_next
    return where


# torch's pipelining functions whose npu tensors carry real values between stages (the warm-up vote, the DYNAMIC
# shape exchange's object lists): stage.py's _recv_meta/_send_meta and schedules.py's _warmup_p2p
_PIPELINE_EXCHANGE = {"_warmup_p2p", "_recv_meta", "_send_meta"}


def _in_pipeline_exchange(names=_PIPELINE_EXCHANGE) -> bool:
    f = sys._getframe(2)
    for _ in range(16):
        if f is None:
            return False
        if f.f_code.co_name in names and f.f_code.co_filename.startswith(_TORCH_DIR):
            return True
        f = f.f_back
    return False


def _called_from_xp() -> bool:
    f = sys._getframe(2)
    for _ in range(60):
        if f is None:
            return False
        if f.f_code.co_filename.startswith(_XP_DIR):
            return True
        f = f.f_back
    return False


def _tensors(x, out):
    if isinstance(x, torch.Tensor):
        out.append(x)
    elif isinstance(x, (list, tuple)):
        for y in x:
            _tensors(y, out)
    elif isinstance(x, dict):
        for y in x.values():
            _tensors(y, out)
    return out


def _placeholder(func, args):
    if func is _aten._local_scalar_dense.default:
        t = args[0]
        if t.dtype == torch.bool:
            return False
        if t.is_complex():
            return 0j
        return 0.0 if t.is_floating_point() else 0
    return False


class CaptureMode(TorchDispatchMode):
    """npu tensors fake, real cpu tensors real, host reads as placeholders (module doc).

    ``reads``: ``{file:line: count}`` of the host reads answered with a placeholder. ``real_pipeline``: the
    pipeline group is real (a multi-stage capture, npudist.plan.pipeline_group): npu tensors made inside torch's
    pipeline warm-up vote and shape exchange are real, so their values travel between the stages' processes;
    otherwise (one stage captured) the vote's read is answered STATIC.
    """

    def __init__(self, real_pipeline: bool = False):
        super().__init__()
        self.fake = FakeTensorMode(allow_non_fake_inputs=True)
        self.reads: dict[str, int] = {}
        self.real_pipeline = real_pipeline

    def _needs_fake(self, func, tensors, kwargs) -> bool:
        if any(isinstance(t, FakeTensor) for t in tensors):
            return True
        dev = kwargs.get("device")
        to_npu = dev is not None and torch.device(dev).type == "npu"
        if not to_npu:
            return False
        if any(t.device.type == "meta" for t in tensors):
            return True  # to_empty(device="npu") of a meta module
        if tensors:
            return False  # a copy of real data to npu stays real (RNG states, batches made on cpu)
        if self.real_pipeline and _in_pipeline_exchange():
            return False  # the vote's and the object lists' receive buffers: real values from another stage
        return not _called_from_xp()  # a factory: fake, except npudist.xp's arrays (the data pipeline)

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if any(t not in (torch.Tensor, torch.nn.Parameter, FakeTensor) for t in types):
            return NotImplemented  # DTensor and other subclasses: they come back with their inner tensors
        tensors = _tensors(args, _tensors(kwargs, []))
        if not self._needs_fake(func, tensors, kwargs):
            if func is _RECV and self.real_pipeline and tensors and tensors[0].device.type == "npu":
                _check_real_recv(args)
            return func(*args, **kwargs)
        if func in _HOST_READS:
            return self._read(func, args)
        try:
            with self.fake:
                return func(*args, **kwargs)
        except DynamicOutputShapeException:
            raise CaptureError(f"{func._schema.name} at {user_line()}: its output shape depends on tensor values, "
                               f"which a capture does not have (fake tensors); give the op a static size (e.g. "
                               f"torch.where(mask, x, 0) instead of x[mask], nonzero/unique with a size= bound where "
                               f"the op has one) or keep it out of the captured step") from None
        except DataDependentOutputException:
            return self._read(func, args)

    def _read(self, func, args):
        if not self.real_pipeline and _in_pipeline_exchange({"_warmup_p2p"}):
            # torch's pipeline warm-up vote (schedules.py _warmup_p2p) reads 1 when every stage has static
            # metadata (PipelineStage(input_args=, output_args=)); the capture answers for the stages it does not
            # run (docs/plan.md, "Pipeline parallelism"): they are built as this one
            return 1
        where = user_line()
        self.reads[where] = self.reads.get(where, 0) + 1
        return _placeholder(func, args)


def _check_real_recv(args) -> None:
    """A receive of real npu data (torch's pipeline vote or shape exchange) must be over the real pipeline group;
    over a fake one it would read nothing: a CaptureError naming the group and what --ranks must be."""
    import torch.distributed as dist

    from npudist.plan.pipeline_group import is_real_group

    pg = next((dist.ProcessGroup.unbox(a) if isinstance(a, torch.ScriptObject) else a for a in args
               if isinstance(a, (dist.ProcessGroup, torch.ScriptObject))), None)
    if pg is None:
        return
    ranks = dist.get_process_group_ranks(pg)
    if not is_real_group(ranks):
        raise CaptureError(f"rank {dist.get_rank()} receives pipeline metadata (torch's warm-up vote or shape "
                           f"exchange) over the group {ranks}, which this capture does not run: --ranks must name "
                           f"exactly the ranks of one pipeline group, one per stage (here {','.join(map(str, ranks))})")


@dataclasses.dataclass
class CapturedStep:
    """What :func:`capture_script` returns: the recorded step's trace (rank ``rank`` of ``world_size``), the
    boundary that delimited it (``"optimizer"`` or ``"profiler"``) and the placeholder reads
    (``{file:line: count}``)."""
    trace: dict
    boundary: str
    host_reads: dict[str, int]


class _Steps:
    """Counts step boundaries and starts / ends the recording (module doc)."""

    def __init__(self, mode: CaptureMode, warmup: int, boundary: str, tokens: int | None):
        self.mode, self.warmup, self.kind, self.tokens = mode, warmup, boundary, tokens
        self.n = {"optimizer": 0, "profiler": 0}
        self.rec: StepRecorder | None = None
        self.rec_kind: str | None = None
        self.result: dict | None = None
        self.done_kind: str | None = None

    def boundary(self, kind: str, tokens: int | None = None) -> None:
        self.n[kind] += 1
        if tokens is not None and kind == "profiler":
            self.tokens = self.tokens or int(tokens)
        # auto: optimizer.step() counts while the script has not called npudist.profiler.step()
        if self.kind != "auto" and kind != self.kind:
            return
        if self.kind == "auto" and kind == "optimizer" and self.n["profiler"]:
            return
        n = self.n[kind]
        if self.rec is not None and self.rec_kind == kind and n == self.warmup + 1:
            self._finish(kind)
        if n == self.warmup:
            self.start(kind)

    def start(self, kind: str | None) -> None:
        if self.rec is not None:  # an optimizer boundary began it; npudist.profiler.step() now takes over
            self.rec.__exit__(None, None, None)
        gc.collect()
        existing = [o for o in gc.get_objects() if type(o) in (FakeTensor, torch.Tensor, torch.nn.Parameter)
                    and o.device.type == "npu"]
        self.rec = StepRecorder(tokens=self.tokens, step=self.warmup, existing=existing)
        self.rec_kind = kind
        self.rec.__enter__()

    def _finish(self, kind: str) -> None:
        rec, self.rec = self.rec, None
        rec.__exit__(None, None, None)
        if self.tokens is not None:
            rec.tokens = self.tokens
        self.result, self.done_kind = rec.trace(), kind
        raise _StopScript


def _serve_store():
    from torch.distributed import TCPStore

    return TCPStore("127.0.0.1", 0, is_master=True, wait_for_workers=False, use_libuv=True)


def capture_script(script: str, args: list[str], *, world_size: int, rank: int = 0, nproc_per_node: int = 8,
                   warmup_steps: int = 1, boundary: str = "auto", tokens: int | None = None,
                   store: tuple[str, int] | None = None, pipeline_ranks: list[int] | None = None) -> CapturedStep:
    """Runs ``script`` with ``args`` as rank ``rank`` of a ``world_size``-rank job (``nproc_per_node`` ranks
    per node) until one step is recorded; returns it (module doc).

    ``warmup_steps``: steps run before the recorded one (0 records the first; then the boundary is
    ``optimizer.step()``). ``boundary``: ``"auto"`` (npudist.profiler.step() when the script calls it,
    else optimizer.step()), ``"optimizer"`` or ``"profiler"``. ``tokens``: this rank's tokens per step
    (default: what the script passes to npudist.profiler.step()).

    ``store`` (host, port): a TCPStore the capture's processes share (default: this process serves its own);
    ``pipeline_ranks``: the ranks captured at once, one process per pipeline stage, all joining ``store``
    (npudist.plan.pipeline_group: the group of exactly these ranks is real; docs/plan.md, "Pipeline parallelism").

    Raises CaptureError (data-dependent shapes, a script that ends or exits before the step is
    recorded, a fake module moved with ``.to()``), FileNotFoundError for a missing script, ValueError
    for bad sizes. Call it once per process: it initialises torch.distributed's default group.
    """
    import torch.distributed as dist

    import npudist.hccl
    import npudist.profiler.steps as prof_steps

    if not os.path.isfile(script):
        raise FileNotFoundError(f"script {script!r} does not exist")
    if world_size < 1 or not 0 <= rank < world_size or nproc_per_node < 1:
        raise ValueError(f"rank {rank} of world size {world_size} ({nproc_per_node} per node): give 0 <= rank < "
                         f"world size and positive sizes")
    if boundary not in ("auto", "optimizer", "profiler"):
        raise ValueError(f"step boundary {boundary!r}: use auto, optimizer or profiler")
    if warmup_steps < 0:
        raise ValueError(f"warmup steps {warmup_steps}: give 0 or more")
    if dist.is_initialized():
        raise CaptureError("torch.distributed is already initialised in this process: capture a script in a fresh "
                           "process (python -m npudist.plan capture ...)")
    from npudist.plan.pipeline_group import capture_groups

    if pipeline_ranks is not None and (store is None or rank not in pipeline_ranks):
        raise ValueError(f"pipeline ranks {pipeline_ranks}: a multi-stage capture needs the shared store and this "
                         f"rank ({rank}) among them")
    served = _serve_store() if store is None else None
    host, port = ("127.0.0.1", served.port) if store is None else store
    env = {"RANK": str(rank), "WORLD_SIZE": str(world_size), "LOCAL_RANK": str(rank % nproc_per_node),
           "LOCAL_WORLD_SIZE": str(nproc_per_node), "GROUP_RANK": str(rank // nproc_per_node),
           "NODE_RANK": str(rank // nproc_per_node), "MASTER_ADDR": host, "MASTER_PORT": str(port),
           "TORCHELASTIC_USE_AGENT_STORE": "True", "TORCH_DIST_INIT_BARRIER": "0"}
    saved = {k: _env.raw(k, keep_empty=True) for k in [*env, "NPUDIST_PROFILE_DIR"]}  # restored after
    os.environ.update(env)
    os.environ.pop("NPUDIST_PROFILE_DIR", None)  # npurun --profile's job profiler must not start under capture
    real = pipeline_ranks is not None and len(pipeline_ranks) > 1
    mode = CaptureMode(real_pipeline=real)
    steps = _Steps(mode, warmup_steps, boundary, tokens)
    hook = register_optimizer_step_post_hook(lambda opt, a, k: steps.boundary("optimizer"))
    npudist.hccl._capture_groups = capture_groups(pipeline_ranks if real else None, (host, port))
    prof_steps._capture_hook = lambda tok: steps.boundary("profiler", tok)
    argv = sys.argv
    sys.argv = [script, *args]
    sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
    try:
        with mode:
            if warmup_steps == 0:
                steps.start(None)
                steps.rec_kind = "optimizer" if boundary == "auto" else boundary
            runpy.run_path(script, run_name="__main__")
    except _StopScript:
        pass
    except SystemExit as e:
        raise CaptureError(f"{script} exited (code {e.code}) after {steps.n['optimizer']} optimizer.step() and "
                           f"{steps.n['profiler']} npudist.profiler.step() calls, before step {warmup_steps + 1} "
                           f"ended") from None
    except RuntimeError as e:
        if "Couldn't swap" in str(e):
            raise CaptureError(f"{_user_line_of(e)}: nn.Module.to() / _apply on a module whose parameters are fake "
                               f"npu tensors (torch 2.13 cannot swap them: {e}); under capture build the module "
                               f"on meta or npu in its final dtype (torch.device('meta') + to_empty, "
                               f"torch.set_default_dtype, or dtype=) instead of converting it") from None
        raise
    finally:
        if steps.rec is not None:
            steps.rec.__exit__(None, None, None)
        sys.argv = argv
        sys.path.remove(os.path.dirname(os.path.abspath(script)))
        hook.remove()
        prof_steps._capture_hook = None
        npudist.hccl._capture_groups = None
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    if steps.result is None:
        raise CaptureError(f"{script} ended after {steps.n['optimizer']} optimizer.step() and {steps.n['profiler']} "
                           f"npudist.profiler.step() calls: the capture needs {warmup_steps + 1} step boundaries "
                           f"(--warmup-steps {warmup_steps} + the recorded step); run more steps, or mark each step "
                           f"with npudist.profiler.step()")
    if mode.reads:
        lines = ", ".join(f"{w} ({n}x)" for w, n in sorted(mode.reads.items()))
        warnings.warn(f"the captured script read values of fake tensors (.item(), .tolist(), float(), printing); "
                      f"each got a placeholder (0, 0.0 or False), so control flow on them follows the placeholder: "
                      f"{lines}", HostReadWarning, stacklevel=2)
    return CapturedStep(steps.result, steps.done_kind, dict(mode.reads))
