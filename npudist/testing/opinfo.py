"""Compares an op on npu with the same op on cpu, using PyTorch's OpInfo database.

``compare_op(opinfo, dtype)`` runs every sample input of ``opinfo`` (from
torch.testing._internal.common_methods_invocations.op_db) on cpu and on npu,
forward and (where the op supports autograd and the dtype is floating)
backward, and returns an OpResult: "pass", "fail" (values differ) or "error"
(npu raised where cpu did not), with the first reason.

Random ops (OpInfo marks them nondeterministic-seeded) compare only shapes
and dtypes, since npu and cpu draw different numbers.
"""
from __future__ import annotations

import dataclasses
import traceback

import torch


@dataclasses.dataclass
class OpResult:
    name: str
    variant: str
    dtype: str
    status: str  # "pass" | "fail" | "error" | "skip"
    samples: int = 0
    reason: str = ""


def _to(obj, device):
    if isinstance(obj, torch.Tensor):
        out = obj.detach().to(device)
        out.requires_grad_(obj.requires_grad)
        return out
    if isinstance(obj, (list, tuple)):
        return type(obj)(_to(o, device) for o in obj)
    if isinstance(obj, dict):
        return {k: _to(v, device) for k, v in obj.items()}
    return obj


def _tensors(obj):
    if isinstance(obj, torch.Tensor):
        return [obj]
    if isinstance(obj, (list, tuple)):
        return [t for o in obj for t in _tensors(o)]
    if isinstance(obj, dict):
        return [t for v in obj.values() for t in _tensors(v)]
    return []


def _compare(cpu_out, npu_out, exact_shapes_only, what):
    cpu_ts, npu_ts = _tensors(cpu_out), _tensors(npu_out)
    if len(cpu_ts) != len(npu_ts):
        return f"{what}: {len(npu_ts)} tensors on npu vs {len(cpu_ts)} on cpu"
    for i, (c, n) in enumerate(zip(cpu_ts, npu_ts)):
        if n.device.type != "npu":
            return f"{what}[{i}] is on {n.device}, expected npu"
        if c.shape != n.shape or c.dtype != n.dtype:
            return f"{what}[{i}]: npu {tuple(n.shape)} {n.dtype} vs cpu {tuple(c.shape)} {c.dtype}"
        if exact_shapes_only:
            continue
        try:
            torch.testing.assert_close(n.cpu(), c, equal_nan=True, check_device=False)
        except AssertionError as err:
            return f"{what}[{i}] differs: {str(err).splitlines()[0:3]}"
    return None


def values_are_random(op) -> bool:
    """True when ``op`` (an OpInfo) draws random numbers or returns uninitialised memory:
    then only output shapes and dtypes can be compared between two runs."""
    random = getattr(op, "is_factory_function", False) or "nondeterministic_seeded" in str(
        getattr(op, "decorators", "")
    )
    random = random or op.name in {"bernoulli", "normal", "rand_like", "randn_like", "randint_like", "multinomial",
                                   "nn.functional.dropout", "nn.functional.rrelu", "uniform", "cauchy",
                                   "exponential", "geometric", "log_normal", "randint", "randn", "rand",
                                   "nn.functional.feature_alpha_dropout", "nn.functional.alpha_dropout",
                                   "nn.functional.dropout2d", "nn.functional.dropout3d", "nn.functional.dropout1d"}
    # Uninitialised memory: only shapes and dtypes can be compared.
    random = random or op.name in {"empty", "empty_like", "new_empty", "new_empty_strided", "empty_permuted",
                                   "empty_strided"}
    return random


def compare_op(op, dtype, max_samples=8, backward=True) -> OpResult:
    """Runs ``op`` (an OpInfo) on cpu and npu for ``dtype``; see module docstring."""
    result = OpResult(op.name, op.variant_test_name, str(dtype).replace("torch.", ""), "pass")
    random = values_are_random(op)
    if op.name == "tensor_split":
        # Its sections tensor must stay on cpu (as on CUDA); this harness moves every tensor.
        return dataclasses.replace(result, status="skip", reason="sections tensor must be on cpu, as on CUDA")
    do_grad = backward and op.supports_autograd and dtype.is_floating_point
    try:
        samples = list(op.sample_inputs("cpu", dtype, requires_grad=do_grad))[:max_samples]
    except Exception as err:  # the database itself cannot build samples here
        return dataclasses.replace(result, status="skip", reason=f"sample_inputs failed on cpu: {err}")
    for sample in samples:
        args = (sample.input, *sample.args)
        if any(t.layout != torch.strided for t in _tensors((args, sample.kwargs))):
            return dataclasses.replace(result, status="skip", reason="sparse layouts are not supported on npu")
        if op.name.startswith("as_strided") and sample.input._base is not None:
            continue  # .to("npu") copies a view into a fresh storage: offsets into the base differ
        try:
            torch.manual_seed(0)
            cpu_out = op(*args, **sample.kwargs)
        except Exception:
            continue  # invalid sample for cpu as well: nothing to compare
        npu_args = _to(args, "npu")
        npu_kwargs = _to(sample.kwargs, "npu")
        if "device" in npu_kwargs:  # factory functions: create on npu instead
            npu_kwargs["device"] = "npu"
        # A device named in the arguments (x.to(torch.device("cpu"))) means "this device" here.
        npu_args = tuple("npu" if (isinstance(a, torch.device) and a.type == "cpu") or (isinstance(a, str) and a == "cpu") else a
                         for a in npu_args)
        try:
            torch.manual_seed(0)
            npu_out = op(*npu_args, **npu_kwargs)
        except Exception as err:
            return dataclasses.replace(result, status="error", samples=result.samples,
                                       reason=f"{type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}"
                                       f" at {traceback.extract_tb(err.__traceback__)[-1].name}")
        problem = _compare(cpu_out, npu_out, random, "output")
        if problem:
            return dataclasses.replace(result, status="fail", reason=problem)
        if do_grad and not random:
            problem = _compare_backward(args, npu_args, cpu_out, npu_out)
            if problem:
                return dataclasses.replace(result, status="fail" if "differs" in problem else "error",
                                           reason=problem)
        result.samples += 1
    if result.samples == 0:
        return dataclasses.replace(result, status="skip", reason="no sample ran on cpu")
    return result


def _compare_backward(cpu_args, npu_args, cpu_out, npu_out):
    cpu_outs = [t for t in _tensors(cpu_out) if t.requires_grad and t.dtype.is_floating_point]
    npu_outs = [t for t in _tensors(npu_out) if t.requires_grad and t.dtype.is_floating_point]
    cpu_in = [t for t in _tensors(cpu_args) if t.requires_grad]
    npu_in = [t for t in _tensors(npu_args) if t.requires_grad]
    if not cpu_outs or not cpu_in:
        return None
    gen = torch.Generator().manual_seed(1)
    grads = [torch.randn(t.shape, generator=gen, dtype=t.dtype) for t in cpu_outs]
    try:
        cpu_g = torch.autograd.grad(cpu_outs, cpu_in, grads, allow_unused=True)
    except Exception:
        return None  # not differentiable for this sample on cpu either
    try:
        npu_g = torch.autograd.grad(npu_outs, npu_in, [g.to("npu") for g in grads], allow_unused=True)
    except Exception as err:
        return f"backward raised {type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}"
    pairs = [(c, n) for c, n in zip(cpu_g, npu_g) if c is not None or n is not None]
    for i, (c, n) in enumerate(pairs):
        if (c is None) != (n is None):
            return f"grad[{i}] is None on one device only"
    return _compare([c for c, _ in pairs], [n for _, n in pairs], False, "grad")
