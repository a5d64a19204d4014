"""``transfer_to_npu``: run a script written for CUDA on npu, unchanged (opt-in, reversible).

``from torch_npu.contrib import transfer_to_npu`` (or ``npudist.compat.transfer.enable()``)
turns it on; ``disable()`` turns it off and restores everything it replaced. PyTorch has
no registration point for redirecting "cuda", so this is a layer over public torch API
only — nothing private is patched:

1. A ``TorchFunctionMode`` (pushed on the calling thread; autograd's worker threads
   inherit it) rewrites device arguments of every torch function and Tensor method:
   ``device="cuda"``/``"cuda:N"``/``torch.device("cuda", N)`` -> npu; ``Tensor.cuda()``
   -> ``Tensor.npu()``; ``Tensor.to(N)`` (an int) -> npu:N; ``Tensor.is_cuda`` ->
   ``is_npu``. ``nn.Module.cuda()`` / ``.to("cuda")`` go through the Tensor methods.
2. Public ``torch.cuda`` attributes are set to ``torch.npu``'s: is_available,
   device_count, set_device, current_device, synchronize, device, device_of,
   is_initialized, the memory API, get_device_capability/name/properties,
   is_bf16_supported, Stream, Event, stream, current_stream, default_stream,
   manual_seed[_all], seed[_all], initial_seed, get/set_rng_state[_all] (also in
   ``torch.cuda.random``), ``torch.cuda.amp.autocast``/``GradScaler``, ``caching_allocator_alloc``/``delete``,
   ``default_generators``, the ``torch.cuda.memory`` module (``_record_memory_history``,
   ``_snapshot``, ...), and ``torch.cuda.nvtx`` range_push / range_pop / range / mark
   (no-op ranges that show as torch.profiler scopes).
3. ``torch.autocast`` / ``torch.amp.autocast`` / ``torch.amp.GradScaler``, and autocast's state
   functions ``torch.is_autocast_enabled`` / ``get_autocast_dtype`` / ``set_autocast_enabled`` /
   ``set_autocast_dtype`` with "cuda" or in their CUDA-only forms (no device type;
   ``get_autocast_gpu_dtype`` / ``set_autocast_gpu_dtype``), so model code that asks
   ``torch.is_autocast_enabled()`` inside ``torch.autocast("cuda")`` sees npu's autocast, as on CUDA;
   ``torch.Generator`` and ``torch.Event`` take ``"cuda"`` as ``"npu"`` (the last two are
   replaced by classes that build the real torch objects, so ``isinstance`` checks hold);
   ``torch.load`` maps ``map_location`` "cuda[:N]" / cuda devices (also as dict keys and
   values) to npu, and with no ``map_location`` restores storages saved on cuda to npu.
4. torch.distributed: ``init_process_group`` / ``new_group`` / ``new_subgroups`` take
   backend "nccl" as "hccl" (also in "cpu:gloo,cuda:nccl" forms) and a cuda
   ``device_id`` as npu; ``init_device_mesh`` takes "cuda" as "npu" (a ``DeviceMesh("cuda",
   ...)`` built directly is not redirected: replacing the class would break isinstance
   checks inside torch);
   ``is_nccl_available`` is True; ProcessGroupNCCL's variables (``TORCH_NCCL_ASYNC_ERROR_HANDLING``,
   ``TORCH_NCCL_BLOCKING_WAIT``, ... and the older ``NCCL_*`` forms) set TORCH_HCCL_* twins that
   are unset (at enable() and again when a group is created). DDP's ``device_ids`` (ints or cuda devices) work
   as they are: DDP reads the index.

Names captured before ``enable()`` (``from torch import autocast`` at the top of a
script that imports transfer_to_npu later) keep the original object: import
transfer_to_npu first, as torch_npu's documentation also asks. ``torch.device("cuda")``
built while the redirection is on is an npu device (PyTorch 2.13 sends torch.device
construction through TorchFunctionModes); one built before is redirected wherever it is
passed to torch. ``torch.cuda.CUDAGraph``, ``graph``, ``graph_pool_handle``,
``make_graphed_callables`` and ``is_current_stream_capturing`` are npu graphs'
(docs/graph.md). Not redirected: ``torch.compile`` backend names (they are device independent;
Inductor's CUDA-graph modes are skipped for non-cuda devices, as PyTorch does).
The per-op cost of (1) is measured by benchmarks/transfer_to_npu_overhead.py.
"""
from __future__ import annotations

import contextlib
import functools
import inspect
import os
import re
import threading

import torch
from torch.overrides import TorchFunctionMode

from npudist import _env

__all__ = ["enable", "disable", "is_enabled", "REDIRECTED_CUDA_ATTRIBUTES"]

_CUDA = re.compile(r"^cuda(:\d+)?$")
_lock = threading.Lock()
_saved: list[tuple[object, str, object]] = []  # (owner, attribute, original or _MISSING)
_MISSING = object()
_mode: _CudaToNpuMode | None = None

REDIRECTED_CUDA_ATTRIBUTES = (
    "is_available", "device_count", "set_device", "current_device", "synchronize", "device", "device_of",
    "is_initialized", "init", "memory_allocated", "max_memory_allocated", "memory_reserved", "max_memory_reserved",
    "memory_stats", "memory_summary", "memory_snapshot", "reset_peak_memory_stats", "reset_max_memory_allocated",
    "reset_accumulated_memory_stats", "empty_cache", "mem_get_info", "set_per_process_memory_fraction",
    "get_device_capability", "get_device_name", "is_bf16_supported", "Stream", "Event",
    "stream", "current_stream", "default_stream", "set_stream", "manual_seed", "manual_seed_all", "seed",
    "seed_all", "initial_seed", "get_rng_state", "set_rng_state", "get_rng_state_all", "set_rng_state_all",
    "get_amp_supported_dtype", "caching_allocator_alloc", "caching_allocator_delete", "default_generators",
    "ipc_collect", "get_per_process_memory_fraction",
)


def _to_npu_device(value):
    """The npu form of a cuda device given as str or torch.device; anything else unchanged."""
    t = type(value)
    if t is str:
        if _CUDA.match(value):
            return "npu" + value[4:]
    elif t is torch.device and value.type == "cuda":
        return torch.device("npu", value.index) if value.index is not None else torch.device("npu")
    return value


def _int_to_npu(value):
    return torch.device("npu", value) if type(value) is int else _to_npu_device(value)


_TO_METHODS = {torch.Tensor.to}
_CUDA_METHOD = torch.Tensor.cuda
_IS_CUDA_DESCRIPTOR = inspect.getattr_static(torch.Tensor, "is_cuda")
_METHOD_WRAPPER = type(torch.Tensor.is_cuda.__get__)  # property getters reach modes as fresh method-wrappers


class _CudaToNpuMode(TorchFunctionMode):
    """Rewrites cuda device arguments to npu for every torch function / Tensor method it sees."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        if type(func) is _METHOD_WRAPPER and func.__self__ is _IS_CUDA_DESCRIPTOR:
            return args[0].is_npu
        if func is _CUDA_METHOD:
            func = torch.Tensor.npu
            if kwargs and "device" in kwargs:
                kwargs = dict(kwargs, device=_int_to_npu(kwargs["device"]))
        if kwargs:
            dev = kwargs.get("device")
            if dev is not None:
                new = _int_to_npu(dev) if func in _TO_METHODS else _to_npu_device(dev)
                if new is not dev:
                    kwargs = dict(kwargs, device=new)
        else:
            kwargs = {}
        for i, a in enumerate(args):
            t = type(a)
            if t is str or t is torch.device or (t is int and i == 1 and func in _TO_METHODS):
                new_args = list(args)
                for j in range(i, len(args)):
                    b = args[j]
                    new_args[j] = _int_to_npu(b) if (j == 1 and func in _TO_METHODS) else _to_npu_device(b)
                args = tuple(new_args)
                break
        return func(*args, **kwargs)


def _replace(owner, name, value) -> None:
    _saved.append((owner, name, owner.__dict__.get(name, _MISSING) if hasattr(owner, "__dict__") else
                   getattr(owner, name, _MISSING)))
    setattr(owner, name, value)


def _map_device_type(device_type):
    return "npu" if device_type == "cuda" else device_type


class _Autocast(torch.amp.autocast):
    """torch.amp.autocast taking "cuda" as "npu" (transfer_to_npu)."""

    def __init__(self, device_type, *args, **kwargs):
        super().__init__(_map_device_type(device_type), *args, **kwargs)


# torch's autocast state functions: name -> how many positional arguments its CUDA-only form takes
# (the form without a device type, which asks about CUDA; None: every form names the device type).
_AUTOCAST_STATE = {"is_autocast_enabled": 0, "set_autocast_enabled": 1, "get_autocast_dtype": None,
                   "set_autocast_dtype": None}
_AUTOCAST_GPU = {"get_autocast_gpu_dtype": "get_autocast_dtype", "set_autocast_gpu_dtype": "set_autocast_dtype"}


def _autocast_state(fn, cuda_only_arity):
    """torch.<autocast state function> asking about npu where it would ask about CUDA: a "cuda"
    device type (positional or ``device_type=``) and the CUDA-only form without one."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        if "device_type" in kwargs:
            kwargs = dict(kwargs, device_type=_map_device_type(kwargs["device_type"]))
        elif args and isinstance(args[0], str):
            args = (_map_device_type(args[0]),) + tuple(args[1:])
        elif cuda_only_arity is not None and len(args) + len(kwargs) == cuda_only_arity:
            args = ("npu",) + tuple(args)
        return fn(*args, **kwargs)

    return wrapper


def _autocast_gpu(legacy, fn):
    """torch.get/set_autocast_gpu_dtype (CUDA's autocast dtype) as ``fn("npu", ...)``."""
    @functools.wraps(legacy)
    def wrapper(*args, **kwargs):
        return fn("npu", *args, **kwargs)

    return wrapper


class _GradScaler(torch.amp.GradScaler):
    """torch.amp.GradScaler taking "cuda" as "npu" (transfer_to_npu)."""

    def __init__(self, device: str = "cuda", *args, **kwargs):
        super().__init__(_map_device_type(device), *args, **kwargs)


class _RedirectingClassMeta(type):
    """Metaclass of the stand-ins for torch.Generator / torch.Event: calling the stand-in builds
    the real torch class with a cuda device mapped to npu; isinstance/issubclass see the real class."""

    def __call__(cls, *args, **kwargs):
        if args:
            args = (_to_npu_device(args[0]),) + tuple(args[1:])
        if kwargs.get("device") is not None:
            kwargs = dict(kwargs, device=_to_npu_device(kwargs["device"]))
        return cls._real(*args, **kwargs)

    def __instancecheck__(cls, obj):
        return isinstance(obj, cls._real)

    def __subclasscheck__(cls, sub):
        return issubclass(sub, cls._real)


def _redirecting_class(real):
    return _RedirectingClassMeta(real.__name__, (), {"_real": real, "__doc__": real.__doc__,
                                                    "__module__": real.__module__})


class _CudaShapedProperties:
    """What ``torch.cuda.get_device_properties`` returns under transfer_to_npu: the npu's
    properties (every field of torch.npu.get_device_properties) plus ``gcnArchName`` (""),
    which torch's own code reads from CUDA device properties — Inductor's cache key does,
    so without it ``torch.compile`` fails with AttributeError once torch.cuda looks available."""

    gcnArchName = ""

    def __init__(self, npu_properties):
        self._npu = npu_properties

    def __getattr__(self, name):
        return getattr(self._npu, name)

    def __repr__(self):
        return repr(self._npu)


def _cuda_device_properties(device=None):
    return _CudaShapedProperties(torch.npu.get_device_properties(_to_npu_device(device)))


def _to_npu_location(location):
    """A torch.load map_location with cuda devices mapped to npu (str, torch.device, dict)."""
    if isinstance(location, dict):
        mapped = {k: _to_npu_device(v) for k, v in location.items()}
        for k, v in location.items():  # storages saved here under transfer_to_npu carry "npu:N" tags
            npu_key = _to_npu_device(k)
            if npu_key != k:
                mapped.setdefault(npu_key, _to_npu_device(v))
        return mapped
    return _to_npu_device(location)


def _restore_cuda_on_npu(storage, location):
    return torch.serialization.default_restore_location(storage, _to_npu_device(location))


def _wrap_load(load):
    @functools.wraps(load)
    def wrapper(f, map_location=None, *args, **kwargs):
        map_location = _restore_cuda_on_npu if map_location is None else _to_npu_location(map_location)
        return load(f, map_location, *args, **kwargs)

    return wrapper


# ProcessGroupNCCL's variables that have hccl twins (docs/watchdog.md): TORCH_NCCL_<X> (and the
# older NCCL_<X> names ProcessGroupNCCL still reads) set by a CUDA script or its launcher mean
# TORCH_HCCL_<X> unless that is set itself.
_NCCL_ENV_TWINS = ("ASYNC_ERROR_HANDLING", "BLOCKING_WAIT", "DESYNC_DEBUG", "DUMP_ON_TIMEOUT", "ENABLE_MONITORING",
                   "HEARTBEAT_TIMEOUT_SEC", "TRACE_BUFFER_SIZE", "DEBUG_INFO_TEMP_FILE")
_NCCL_ENV_LEGACY = ("ASYNC_ERROR_HANDLING", "BLOCKING_WAIT")


_nccl_env_copied: dict[str, str] = {}  # TORCH_HCCL_<X> -> the value _apply_nccl_env() gave it


def _apply_nccl_env() -> None:
    """Copies TORCH_NCCL_<X> (else NCCL_<X>, for the names ProcessGroupNCCL still reads so) to
    TORCH_HCCL_<X> unless that was set by someone else. Run at enable() and again by the wrapped
    init_process_group / new_group, so a value a script sets between its imports and group creation
    wins over one its launcher set (torchrun's agent sets TORCH_NCCL_ASYNC_ERROR_HANDLING=1)."""
    for name in _NCCL_ENV_TWINS:
        target = "TORCH_HCCL_" + name
        current = _env.raw(target, keep_empty=True)
        if current is not None and _nccl_env_copied.get(target) != current:
            continue  # set explicitly: it wins
        value = _env.raw("TORCH_NCCL_" + name, keep_empty=True)
        if value is None and name in _NCCL_ENV_LEGACY:
            value = _env.raw("NCCL_" + name, keep_empty=True)
        if value is not None:
            os.environ[target] = _nccl_env_copied[target] = value


def _map_backend(backend):
    if not isinstance(backend, str):
        return backend
    return backend.replace("nccl", "hccl").replace("cuda:", "npu:")


def _wrap_dist(fn, backend_kw="backend", device_kw=None):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        _apply_nccl_env()
        if args and backend_kw == "backend" and isinstance(args[0], str):
            args = (_map_backend(args[0]),) + tuple(args[1:])
        if backend_kw in kwargs:
            kwargs[backend_kw] = _map_backend(kwargs[backend_kw])
        if device_kw and kwargs.get(device_kw) is not None:
            kwargs[device_kw] = _to_npu_device(kwargs[device_kw])
        return fn(*args, **kwargs)

    wrapper.__npudist_transfer_original__ = fn
    return wrapper


def _wrap_mesh(fn):
    @functools.wraps(fn)
    def wrapper(device_type, *args, **kwargs):
        return fn(_map_device_type(device_type), *args, **kwargs)

    return wrapper


class _Nvtx:
    """torch.cuda.nvtx under transfer_to_npu: ranges are torch.profiler scopes, marks are no-ops."""

    def __init__(self):
        self._stack = threading.local()

    def range_push(self, msg: str) -> int:
        scopes = self._stack.__dict__.setdefault("scopes", [])
        scope = torch.profiler.record_function(msg)
        scope.__enter__()
        scopes.append(scope)
        return len(scopes) - 1

    def range_pop(self) -> int:
        scopes = self._stack.__dict__.setdefault("scopes", [])
        if scopes:
            scopes.pop().__exit__(None, None, None)
        return len(scopes) - 1 if scopes else -1

    def range_start(self, msg: str) -> int:
        return self.range_push(msg)

    def range_end(self, range_id: int) -> None:
        self.range_pop()

    def mark(self, msg: str) -> None:
        return None

    @contextlib.contextmanager
    def range(self, msg: str, *args, **kwargs):
        with torch.profiler.record_function(msg.format(*args, **kwargs) if (args or kwargs) else msg):
            yield


def is_enabled() -> bool:
    """Whether transfer_to_npu's redirection is on."""
    return _mode is not None


def enable() -> None:
    """Turns the redirection on (idempotent). See the module docstring for what is redirected.

    Raises:
        RuntimeError: no npu is visible (torch.npu.is_available() is False).
    """
    global _mode
    with _lock:
        if _mode is not None:
            return
        if not torch.npu.is_available():
            raise RuntimeError("transfer_to_npu: no npu is visible (NPUDIST_DEVICE_COUNT / ASCEND_RT_VISIBLE_DEVICES)")
        npu = torch.npu
        _apply_nccl_env()
        for name in REDIRECTED_CUDA_ATTRIBUTES:
            _replace(torch.cuda, name, getattr(npu, name))
        # The same RNG functions reached through their own module (torch.cuda.random.manual_seed).
        import torch.cuda.random as cuda_random

        for name in cuda_random.__all__:
            _replace(cuda_random, name, getattr(npu, name))
        amp = torch.cuda.amp
        _replace(amp, "autocast", npu.amp.autocast)
        _replace(amp, "GradScaler", npu.amp.GradScaler)
        _replace(torch.cuda, "nvtx", _Nvtx())
        # CUDA graphs -> npu graphs (npudist.graph.capture: the same API and semantics).
        _replace(torch.cuda, "CUDAGraph", npu.NPUGraph)
        for name in ("graph", "graph_pool_handle", "make_graphed_callables", "is_current_stream_capturing"):
            _replace(torch.cuda, name, getattr(npu, name))
        _replace(torch.cuda, "get_device_properties", _cuda_device_properties)
        _replace(torch.cuda, "memory", npu.memory)
        _replace(torch, "Generator", _redirecting_class(torch._C.Generator))
        _replace(torch, "Event", _redirecting_class(torch._C.Event))
        _replace(torch, "load", _wrap_load(torch.load))
        _replace(torch, "autocast", _Autocast)
        _replace(torch.amp, "autocast", _Autocast)
        _replace(torch.amp, "GradScaler", _GradScaler)
        for name, arity in _AUTOCAST_STATE.items():
            _replace(torch, name, _autocast_state(getattr(torch, name), arity))
        for name, device_form in _AUTOCAST_GPU.items():
            _replace(torch, name, _autocast_gpu(getattr(torch, name), getattr(torch, device_form)))
        if torch.distributed.is_available():
            dist = torch.distributed
            _replace(dist, "init_process_group", _wrap_dist(dist.init_process_group, device_kw="device_id"))
            _replace(dist, "new_group", _wrap_dist(dist.new_group, device_kw="device_id"))
            _replace(dist, "new_subgroups", _wrap_dist(dist.new_subgroups))
            _replace(dist, "is_nccl_available", lambda: True)
            import torch.distributed.device_mesh as device_mesh

            mesh_init = _wrap_mesh(device_mesh.init_device_mesh)
            _replace(device_mesh, "init_device_mesh", mesh_init)
            if hasattr(dist, "init_device_mesh"):
                _replace(dist, "init_device_mesh", mesh_init)
        mode = _CudaToNpuMode()
        mode.__enter__()
        _mode = mode


def disable() -> None:
    """Turns the redirection off and restores every attribute it replaced (idempotent).

    Raises:
        RuntimeError: called from another thread than enable(), or while another TorchFunctionMode
            entered after enable() is still active (exit that one first).
    """
    global _mode
    with _lock:
        if _mode is None:
            return
        try:
            _mode.__exit__(None, None, None)
        except Exception as err:
            raise RuntimeError("transfer_to_npu.disable(): could not pop its TorchFunctionMode — call it on the "
                               "thread that enabled it, after exiting any mode entered since") from err
        _mode = None
        for target, value in _nccl_env_copied.items():
            if _env.raw(target, keep_empty=True) == value:
                os.environ.pop(target, None)
        _nccl_env_copied.clear()
        while _saved:
            owner, name, original = _saved.pop()
            if original is _MISSING:
                with contextlib.suppress(AttributeError):
                    delattr(owner, name)
            else:
                setattr(owner, name, original)
