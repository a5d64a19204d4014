"""``torch_npu.profiler`` over ``torch.profiler`` (partial: torch_npu's offline analysis and hardware counters are absent).

What works: ``profile`` (a torch.profiler.profile: context manager, ``step()``,
``key_averages()``, ``export_chrome_trace``), ``schedule``, ``ProfilerAction``,
``ProfilerActivity.CPU`` / ``.NPU`` (NPU is torch's PrivateUse1 activity),
``tensorboard_trace_handler`` (worker names carry the rank:
``<host>_<pid>_rank<R>``), ``_ExperimentalConfig``, ``ProfilerLevel``,
``AiCMetrics``, ``ExportType``, ``HostSystem`` and the ``supported_*`` queries.

An NPU activity records the npu's own timeline (kernels, memory copies,
collectives and graph replays as device events, npu memory with
profile_memory=True) through npudist's PrivateUse1 profiler registration
(docs/profiling.md). What is missing: torch_npu's offline analysis
(``analyse_flag``, ``analyse``), its db export and every knob of ``_ExperimentalConfig`` that configures Ascend hardware
counters (profiler_level, aic_metrics, l2_cache, op_attr, data_simplification,
record_op_args, gc_detect_threshold, export_type, msprof_tx, host_sys, ...) are
accepted and ignored, with one warning per process naming the ones set.
"""
from __future__ import annotations

import os
import socket
import warnings
from collections.abc import Iterable
from typing import Any

import torch
import torch.profiler as _tp

__all__ = ["profile", "ProfilerActivity", "supported_activities", "tensorboard_trace_handler", "schedule",
           "ProfilerAction", "_ExperimentalConfig", "supported_profiler_level", "supported_ai_core_metrics",
           "supported_export_type", "ProfilerLevel", "AiCMetrics", "ExportType", "HostSystem"]

schedule = _tp.schedule
ProfilerAction = _tp.ProfilerAction
_warned = set()


def _warn_once(key: str, message: str) -> None:
    if key not in _warned:
        _warned.add(key)
        warnings.warn(message, RuntimeWarning, stacklevel=3)


class ProfilerActivity:
    """torch_npu's activities: CPU and NPU (torch.profiler.ProfilerActivity.CPU / .PrivateUse1)."""

    CPU = _tp.ProfilerActivity.CPU
    NPU = _tp.ProfilerActivity.PrivateUse1


class ProfilerLevel:
    """Ascend collection levels (accepted; the simulated npu has no hardware counters to select)."""

    Level_none = "Level_none"
    Level0 = "Level0"
    Level1 = "Level1"
    Level2 = "Level2"


class AiCMetrics:
    """Ascend AI Core metric sets (accepted and ignored)."""

    AiCoreNone = "AiCoreNone"
    PipeUtilization = "PipeUtilization"
    ArithmeticUtilization = "ArithmeticUtilization"
    Memory = "Memory"
    MemoryL0 = "MemoryL0"
    ResourceConflictRatio = "ResourceConflictRatio"
    MemoryUB = "MemoryUB"
    L2Cache = "L2Cache"
    MemoryAccess = "MemoryAccess"


class ExportType:
    """torch_npu's export formats: Text (a chrome trace here) and Db (not available: ignored)."""

    Text = "text"
    Db = "db"


class HostSystem:
    """Host system data torch_npu can sample (accepted and ignored)."""

    CPU = "cpu"
    MEM = "mem"
    DISK = "disk"
    NETWORK = "network"
    OSRT = "osrt"


class _ExperimentalConfig:
    """torch_npu's experimental profiler settings: every knob is accepted; the ones that configure Ascend
    hardware collection are ignored (one warning per process naming those set to non-defaults)."""

    _DEFAULTS = {"profiler_level": ProfilerLevel.Level0, "aic_metrics": AiCMetrics.AiCoreNone, "l2_cache": False,
                 "op_attr": False, "data_simplification": True, "record_op_args": False, "export_type": None,
                 "msprof_tx": False, "mstx": False, "host_sys": None, "mstx_domain_include": None,
                 "mstx_domain_exclude": None, "sys_io": False, "sys_interconnection": False,
                 "gc_detect_threshold": None}

    def __init__(self, **kwargs: Any):
        unknown = set(kwargs) - set(self._DEFAULTS)
        if unknown:
            raise TypeError(f"torch_npu.profiler._ExperimentalConfig got unknown arguments {sorted(unknown)}; "
                            f"it accepts {sorted(self._DEFAULTS)}")
        self.__dict__.update(self._DEFAULTS)
        self.__dict__.update(kwargs)
        ignored = sorted(k for k, v in kwargs.items() if v != self._DEFAULTS[k] and v not in (None, [], ()))
        if ignored:
            _warn_once("experimental", f"torch_npu.profiler._ExperimentalConfig: {', '.join(ignored)} configure "
                                       "Ascend hardware collection and are ignored on this runtime (npudist)")


def supported_activities() -> set:
    """The activities profile() accepts here."""
    return {ProfilerActivity.CPU, ProfilerActivity.NPU}


def supported_profiler_level() -> set:
    return {ProfilerLevel.Level_none, ProfilerLevel.Level0, ProfilerLevel.Level1, ProfilerLevel.Level2}


def supported_ai_core_metrics() -> set:
    return {v for k, v in vars(AiCMetrics).items() if not k.startswith("_")}


def supported_export_type() -> set:
    return {ExportType.Text, ExportType.Db}


def _rank() -> int:
    if torch.distributed.is_available() and torch.distributed.is_initialized():
        return torch.distributed.get_rank()
    from npudist import _env

    return _env.get_int("RANK", 0, lo=0)


def tensorboard_trace_handler(dir_name: str, worker_name: str | None = None, analyse_flag: bool = True,
                              async_mode: bool = False):
    """An ``on_trace_ready`` that writes ``<dir_name>/<worker>.<ts>.pt.trace.json`` (torch's handler).

    The default worker name is ``<host>_<pid>_rank<R>`` (R: the global rank, read when the trace is
    written). ``analyse_flag`` / ``async_mode`` (torch_npu's offline analysis) are accepted and ignored.

    Raises:
        ValueError: ``dir_name`` is empty.
    """
    if not dir_name:
        raise ValueError("torch_npu.profiler.tensorboard_trace_handler needs a directory name")

    def handler(prof):
        name = worker_name or f"{socket.gethostname()}_{os.getpid()}_rank{_rank()}"
        return _tp.tensorboard_trace_handler(dir_name, worker_name=name)(prof)

    return handler


class profile(_tp.profile):
    """torch_npu.profiler.profile: torch.profiler.profile with torch_npu's arguments (module docstring).

    ``experimental_config`` takes torch_npu's _ExperimentalConfig (ignored knobs warn once);
    ``with_modules``, ``with_flops``, ``record_shapes``, ``profile_memory``, ``with_stack`` are torch's.
    """

    def __init__(self, activities: Iterable | None = None, schedule=None, on_trace_ready=None,
                 record_shapes: bool = False, profile_memory: bool = False, with_stack: bool = False,
                 with_flops: bool = False, with_modules: bool = False, experimental_config=None, use_cuda=None):
        if experimental_config is not None and not isinstance(experimental_config, _ExperimentalConfig):
            raise TypeError("torch_npu.profiler.profile: experimental_config must be a "
                            f"torch_npu.profiler._ExperimentalConfig, got {type(experimental_config).__name__}")
        if activities is not None:
            activities = list(activities)
            bad = [a for a in activities if a not in supported_activities()]
            if bad:
                raise ValueError(f"torch_npu.profiler.profile: unsupported activities {bad}; use "
                                 "ProfilerActivity.CPU and/or ProfilerActivity.NPU")
        super().__init__(activities=activities, schedule=schedule, on_trace_ready=on_trace_ready,
                         record_shapes=record_shapes, profile_memory=profile_memory, with_stack=with_stack,
                         with_flops=with_flops, with_modules=with_modules)
        self.npu_experimental_config = experimental_config
