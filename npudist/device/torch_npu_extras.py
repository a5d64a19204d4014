"""Names of ``torch_npu.npu`` beyond torch.cuda's that scripts written for torch_npu call.

On Ascend, torch_npu's ``torch_npu.npu`` module is also ``torch.npu``; here
``torch.npu`` is npudist.device, so these live on it too. Ones that tune the
Ascend compiler or hardware are accepted and have no effect on the simulated
npu (said per function). The survey of which names scripts call is in
docs/torch_npu_compat.md.

Environment:
    NPUDIST_SOC_VERSION  the value get_soc_version() reports (default 220,
                         torch_npu's number for Ascend910B1; scripts compare it
                         to pick code paths)
"""
from __future__ import annotations

import contextlib
import itertools
import warnings

import torch

__all__ = ["aclnn", "can_device_access_peer", "config", "conv", "get_autocast_dtype", "get_mm_bmm_format_nd", "get_soc_version",
           "ipc_collect", "is_autocast_enabled", "is_bf16_supported", "is_current_stream_capturing",
           "is_jit_compile_false", "matmul", "max_memory_cached", "memory_cached", "mstx", "reset_max_memory_cached",
           "set_autocast_dtype", "set_autocast_enabled", "set_compile_mode", "set_mm_bmm_format_nd", "set_option"]

_state = {"jit_compile": False, "mm_bmm_nd": True, "options": {}}


def get_soc_version() -> int:
    """The SoC version number torch_npu reports (NPUDIST_SOC_VERSION, default 220 = Ascend910B1).

    Raises:
        ValueError: NPUDIST_SOC_VERSION is not an integer.
    """
    from npudist import _env

    return _env.get_int("NPUDIST_SOC_VERSION", 220)


def is_bf16_supported(including_emulation: bool = True) -> bool:
    """True: bfloat16 runs on the simulated npu (as torch.cuda.is_bf16_supported on a bf16-capable GPU)."""
    return True


def set_compile_mode(jit_compile: bool = False) -> None:
    """Accepted; selects Ascend's online operator compilation, which the simulated npu has none of."""
    _state["jit_compile"] = bool(jit_compile)


def is_jit_compile_false() -> bool:
    """The negation of the last set_compile_mode(jit_compile=...) (default: True)."""
    return not _state["jit_compile"]


def set_option(option: dict) -> None:
    """Accepted and recorded; ACL runtime options have no effect on the simulated npu.

    Raises:
        TypeError: ``option`` is not a dict.
    """
    if not isinstance(option, dict):
        raise TypeError(f"torch.npu.set_option expects a dict of option names to values, got {type(option).__name__}")
    _state["options"].update(option)


def set_mm_bmm_format_nd(enable: bool) -> None:
    """Accepted; every npu tensor is ND (strided) here."""
    _state["mm_bmm_nd"] = bool(enable)


def get_mm_bmm_format_nd() -> bool:
    """The last set_mm_bmm_format_nd value (default True)."""
    return _state["mm_bmm_nd"]


def memory_cached(device=None) -> int:
    """Deprecated torch.cuda alias of memory_reserved (torch_npu keeps it)."""
    return torch.npu.memory_reserved(device)


def max_memory_cached(device=None) -> int:
    """Deprecated torch.cuda alias of max_memory_reserved."""
    return torch.npu.max_memory_reserved(device)


def reset_max_memory_cached(device=None) -> None:
    """Deprecated torch.cuda alias: resets the peak statistics (reset_peak_memory_stats)."""
    torch.npu.reset_peak_memory_stats(device)


def is_autocast_enabled() -> bool:
    """Whether autocast is on for npu (torch.is_autocast_enabled("npu"))."""
    return torch.is_autocast_enabled("npu")


def set_autocast_enabled(enabled: bool) -> None:
    """torch.set_autocast_enabled("npu", enabled)."""
    torch.set_autocast_enabled("npu", enabled)


def get_autocast_dtype() -> torch.dtype:
    """torch.get_autocast_dtype("npu")."""
    return torch.get_autocast_dtype("npu")


def set_autocast_dtype(dtype: torch.dtype) -> None:
    """torch.set_autocast_dtype("npu", dtype)."""
    torch.set_autocast_dtype("npu", dtype)


def is_current_stream_capturing() -> bool:
    """Whether the current npu stream is capturing a graph (torch.Stream.is_capturing)."""
    return bool(torch.npu.current_stream().is_capturing())


def can_device_access_peer(device: int, peer_device: int) -> bool:
    """True for any two visible npus: in one process their memory is the same host memory.

    Raises:
        ValueError: an index outside the visible npus.
    """
    from npudist.device._devices import _index

    _index(device)
    _index(peer_device)
    return True


from npudist.device.ipc import ipc_collect  # noqa: E402  (torch.npu.ipc_collect; lives with the sharing code)


class _Config:
    """``torch.npu.config``: ``allow_internal_format`` (Ascend private storage formats; always off here,
    setting it is accepted) and ``use_deterministic_algorithms``-style flags scripts set."""

    def __init__(self):
        object.__setattr__(self, "_values", {"allow_internal_format": False})

    def __getattr__(self, name):
        values = object.__getattribute__(self, "_values")
        if name in values:
            return values[name]
        raise AttributeError(f"torch.npu.config has no attribute '{name}'")

    def __setattr__(self, name, value):
        if name == "allow_internal_format" and value:
            warnings.warn("torch.npu.config.allow_internal_format=True has no effect: the simulated npu keeps "
                          "every tensor in the ND (strided) format", RuntimeWarning, stacklevel=2)
        self._values[name] = value


config = _Config()


class _Hf32Switch:
    """``torch.npu.matmul`` / ``torch.npu.conv`` / ``torch.npu.aclnn``: torch_npu's ``allow_hf32`` switch
    (HF32: the cube unit's reduced-precision mode for float32 inputs, like CUDA's TF32; torch_npu's
    defaults: matmul False, conv and aclnn True). The value is kept and read back; the simulated npu
    always computes float32 GEMMs and convolutions in full float32 (the results of allow_hf32=False),
    and bf16/fp16 ones with float32 accumulation either way (docs/device_api.md, "Half precision").

    Raises:
        TypeError: allow_hf32 set to something other than a bool.
    """

    def __init__(self, name: str, default: bool):
        object.__setattr__(self, "_name", name)
        object.__setattr__(self, "allow_hf32", default)

    def __setattr__(self, name, value):
        if name != "allow_hf32":
            raise AttributeError(f"torch.npu.{self._name} has no attribute '{name}' (only allow_hf32)")
        if not isinstance(value, bool):
            raise TypeError(f"torch.npu.{self._name}.allow_hf32 must be a bool, got {type(value).__name__}")
        object.__setattr__(self, name, value)

    def __repr__(self):
        return f"torch.npu.{self._name}(allow_hf32={self.allow_hf32})"


matmul = _Hf32Switch("matmul", False)
conv = _Hf32Switch("conv", True)
aclnn = _Hf32Switch("aclnn", True)


class _Mstx:
    """``torch.npu.mstx``: Ascend's tracing markers (mark, range_start/range_end, range). Ranges open
    ``torch.profiler.record_function`` scopes so they show in torch.profiler traces; marks are no-ops."""

    _ids = itertools.count(1)
    _open: dict = {}

    def mark(self, message: str = "", stream=None, domain: str = "default") -> None:
        return None

    def range_start(self, message: str = "", stream=None, domain: str = "default") -> int:
        rid = next(self._ids)
        scope = torch.profiler.record_function(message or "mstx_range")
        scope.__enter__()
        self._open[rid] = scope
        return rid

    def range_end(self, range_id: int, domain: str = "default") -> None:
        scope = self._open.pop(range_id, None)
        if scope is not None:
            scope.__exit__(None, None, None)

    @contextlib.contextmanager
    def range(self, message: str = "", stream=None, domain: str = "default"):
        with torch.profiler.record_function(message or "mstx_range"):
            yield


mstx = _Mstx()
