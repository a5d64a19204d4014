"""Launching Inductor's C++ kernels on npu so that graph capture can record them.

Inductor's Python wrapper loads each C++ kernel as a tiny Python extension
(``async_compile.cpp_pybinding``) and calls it with tensors and ints. Those
calls bypass the dispatcher, so an npu graph capture (which records what the
dispatcher runs) would not see them. The npu wrapper therefore defines its
kernels through :func:`npu_cpp_pybinding`: the same compiled library, called
through ``npudist._C._NpuKernel`` (the kernel's ``extern "C"`` address), which
runs the kernel at once, or records the call into the npu graph capturing the
current stream (replay then calls the address from C++; csrc/core/graph/
kernel_call.h). This is what lets ``backend="npugraphs"`` and
``torch.npu.graph`` capture compiled code.

Kernels whose parameters are not all pointers or int64 (Inductor passes
float scalars to a few) keep Inductor's own binding; calling one while the
current npu stream is capturing raises instead of running it.
"""
from __future__ import annotations

import ctypes
from collections.abc import Callable
from typing import Any

import torch

from npudist import _C

_INT_TYPES = {"int64_t", "uintptr_t", "long", "long int", "ssize_t", "intptr_t"}


def _is_word(argtype: str) -> bool:
    t = argtype.replace("const ", "").replace("volatile ", "").strip()
    return t.endswith("*") or t in _INT_TYPES


def _kernel_address(binding: Callable) -> int | None:
    module = getattr(binding, "__self__", None)
    path = getattr(module, "__file__", None)
    if not path:
        return None
    try:
        lib = ctypes.CDLL(path)  # the library Python already loaded: same handle
        return ctypes.cast(lib.kernel, ctypes.c_void_p).value
    except (OSError, AttributeError):
        return None


class _UncapturableKernel:
    """Inductor's binding for a kernel npu cannot call by address: runs it, and
    refuses to run while the current npu stream captures (the call would be lost)."""

    def __init__(self, binding: Callable, argtypes: list[str]):
        self._binding = binding
        self._argtypes = argtypes

    def __call__(self, *args: Any) -> None:
        for a in args:
            if isinstance(a, torch.Tensor) and a.device.type == "npu":
                if torch.npu.current_stream(a.device.index).is_capturing():
                    raise RuntimeError(
                        f"a compiled npu kernel with parameters {self._argtypes} cannot be captured in an npu "
                        "graph (only pointer and int64 parameters can); compile without graph capture "
                        "(backend='inductor') or capture outside torch.compile"
                    )
                break
        self._binding(*args)


def _wrap(binding: Callable, argtypes: list[str]) -> Callable:
    if len(argtypes) <= _C._MAX_KERNEL_ARGS and all(_is_word(t) for t in argtypes):
        address = _kernel_address(binding)
        if address:
            return _C._NpuKernel(address, len(argtypes), getattr(binding, "__qualname__", "kernel"))
    return _UncapturableKernel(binding, argtypes)


def npu_cpp_pybinding(async_compile: Any, argtypes: list[str], source_code: str) -> Any:
    """``async_compile.cpp_pybinding`` for npu wrappers: the same kernel, launched
    through ``npudist._C._NpuKernel`` (capturable). Returns the launcher, or a
    future of it when Inductor compiles asynchronously."""
    from torch._inductor.codecache import LambdaFuture

    result = async_compile.cpp_pybinding(argtypes, source_code)
    if isinstance(result, LambdaFuture):
        return LambdaFuture(lambda: _wrap(result.result(), argtypes))
    return _wrap(result, argtypes)
