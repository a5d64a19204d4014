"""Hardware descriptions for the planner: a TOML file read with tomllib (docs/plan.md).

A file describes one kind of node and the network between nodes::

    name = "atlas-like"
    [node]
    devices = 8                      # devices per node
    compute_resources = 8            # independent compute resources per node; devices beyond share them
    [compute]
    peak_tflops = { bfloat16 = 354.0, float16 = 354.0, float32 = 88.0 }   # per device, dense
    efficiency = 0.75                # sustained fraction of peak on large GEMMs
    gemm_tile = [128, 128, 64]       # M, N, K of one GEMM tile (wave quantisation)
    cores = 24                       # tiles that run at once (one wave)
    min_efficiency = 0.05            # floor of the efficiency of tiny GEMMs
    launch_us = 5.0                  # device time added to every kernel
    host_us = 10.0                   # host time to issue one op
    host_blocking = false            # true: a kernel runs on the host thread that issues it
    host_speed = 1.0                 # the host CPU's speed relative to the one that recorded the trace
    vector_cores = 48                # optional: vector units that run a fused attention's softmax (0: none)
    vector_bytes_per_cycle = 256     # bytes one vector unit processes per cycle
    vector_clock_mhz = 1800
    [compute.attention]              # optional: vector passes of the fused attention per score element
    score_bytes = 4                  # bytes of a score element as the vector units process it (fp32)
    forward_passes = 5               # scale, running max, subtract, running sum, cast (exp apart)
    backward_passes = 7              # scale, subtract max, divide by sum, cast P, dP - D, P * (dP - D), cast dS
    exp_passes = 2                   # what one exp costs, in passes
    kv_block = 1024                  # key/value columns per output update (the forward's rescale: 2 d / kv_block)
    [memory]
    capacity_gib = 64
    bandwidth_gbps = 1600            # device memory, GB/s (1e9 B/s)
    host_link_gbps = 25              # host <-> device copies
    [intra_node]
    topology = "full_mesh"           # "full_mesh" | "ring" | "bus"
    link_gbps = 18.3                 # per link (ring, full_mesh)
    all_to_all_copies = 0            # local copies of S serial with an all_to_all of > 2 ranks (HCCL: 1)
    all_to_all_copies_two_ranks = 0  # the same for 2 ranks (HCCL: 2)
    bus_gbps = 0                     # "bus": bus bandwidth of any group (nccl-tests busbw)
    [intra_node.latency_us]          # per collective kind; "default" for the rest
    default = 10.0
    [inter_node]
    nic_gbps = 20.0                  # per device
    latency_us = 20.0

Every number is per device unless it says otherwise; bandwidths are GB/s = 1e9 B/s.
Errors name the file and the key.
"""
from __future__ import annotations

import dataclasses
import math
import os

import tomllib

GiB = 1024 ** 3


@dataclasses.dataclass
class Hardware:
    """A parsed hardware file. Rates in base units: FLOP/s, B/s, seconds, bytes."""
    name: str
    devices_per_node: int
    compute_resources: int
    peak_flops: dict[str, float]
    efficiency: float
    gemm_tile: tuple[int, int, int]
    cores: int
    min_efficiency: float
    launch_s: float
    host_s: float
    host_blocking: bool
    host_speed: float
    capacity_bytes: int
    mem_bw: float
    host_link_bw: float
    topology: str
    link_bw: float
    links_per_device: int
    bus_bw: float
    intra_latency_s: dict[str, float]
    nic_bw: float
    inter_latency_s: float
    comm_uses_compute: bool
    all_to_all_copies: float = 0.0
    all_to_all_copies_two_ranks: float = 0.0
    vector_cores: int = 0
    vector_bytes_per_cycle: float = 0.0
    vector_clock_hz: float = 0.0
    attention: dict = dataclasses.field(default_factory=dict)
    source: str = ""
    raw: dict = dataclasses.field(default_factory=dict, repr=False)

    def peak(self, dtype: str) -> float:
        """Peak FLOP/s of one device for ``dtype`` ("float32", "bfloat16", ...); falls back to float32."""
        if dtype in self.peak_flops:
            return self.peak_flops[dtype]
        return self.peak_flops.get("float32", max(self.peak_flops.values()))

    def vector_rate(self) -> float:
        """Bytes per second all vector units of one device process at peak (0: the file describes none)."""
        return self.vector_cores * self.vector_bytes_per_cycle * self.vector_clock_hz

    def intra_latency(self, kind: str) -> float:
        """Latency (s) of collective ``kind`` within a node."""
        return self.intra_latency_s.get(kind, self.intra_latency_s.get("default", 0.0))

    def share(self, local_devices: int) -> float:
        """How many devices compete for one compute resource when ``local_devices`` run per node."""
        return max(1.0, math.ceil(local_devices / max(1, self.compute_resources)))


def _get(d: dict, path: str, key: str, kind, default=None, *, src: str):
    if key not in d:
        if default is None:
            raise ValueError(f"{src}: [{path}] needs '{key}' (docs/plan.md, 'Hardware file')")
        return default
    v = d[key]
    what = {int: "an integer", float: "a number"}.get(kind, f"a {kind.__name__}")
    if isinstance(v, bool) or isinstance(v, str) and kind is not str:  # int(True) and float("8") would pass
        raise ValueError(f"{src}: [{path}] {key} = {v!r} is not {what}")
    try:
        return kind(v)
    except (TypeError, ValueError):
        raise ValueError(f"{src}: [{path}] {key} = {v!r} is not {what}") from None


def parse(doc: dict, source: str = "<hardware>") -> Hardware:
    """A hardware description from an already-parsed TOML document. Raises ValueError naming the key."""
    for sec in ("node", "compute", "memory", "intra_node", "inter_node", "calibration"):
        if not isinstance(doc.get(sec, {}), dict):
            raise ValueError(f"{source}: '{sec}' must be a table ([{sec}] with its keys below it), not "
                             f"{doc[sec]!r} (docs/plan.md, 'Hardware file')")
    node, comp, mem = doc.get("node", {}), doc.get("compute", {}), doc.get("memory", {})
    intra, inter = doc.get("intra_node", {}), doc.get("inter_node", {})
    peaks = comp.get("peak_tflops")
    if not isinstance(peaks, dict) or not peaks:
        raise ValueError(f"{source}: [compute] needs peak_tflops = {{ float32 = ..., bfloat16 = ... }} (TFLOP/s per "
                         f"device)")
    peak_flops = {}
    for k, v in peaks.items():
        if isinstance(v, bool) or not isinstance(v, (int, float)) or v <= 0:
            raise ValueError(f"{source}: [compute] peak_tflops.{k} = {v!r}: give a positive number of TFLOP/s")
        peak_flops[str(k)] = float(v) * 1e12
    topology = str(intra.get("topology", "ring"))
    if topology not in ("ring", "full_mesh", "bus"):
        raise ValueError(f"{source}: [intra_node] topology = {topology!r}: use 'ring', 'full_mesh' or 'bus'")
    lat = intra.get("latency_us", {})
    if isinstance(lat, (int, float)):
        lat = {"default": float(lat)}
    if not isinstance(lat, dict):
        raise ValueError(f"{source}: [intra_node] latency_us = {lat!r}: give a number or a table of numbers per family")
    for k, v in lat.items():
        if isinstance(v, bool) or not isinstance(v, (int, float)) or v < 0:
            raise ValueError(f"{source}: [intra_node.latency_us] {k} = {v!r}: give a number of microseconds >= 0")
    tile = comp.get("gemm_tile", [1, 1, 1])
    if not (isinstance(tile, list) and len(tile) == 3 and all(isinstance(t, int) and t > 0 for t in tile)):
        raise ValueError(f"{source}: [compute] gemm_tile = {tile!r}: give [M, N, K] positive integers")
    devices = _get(node, "node", "devices", int, src=source)
    hw = Hardware(
        name=str(doc.get("name", os.path.basename(source))),
        devices_per_node=devices,
        compute_resources=_get(node, "node", "compute_resources", int, devices, src=source),
        peak_flops=peak_flops,
        efficiency=_get(comp, "compute", "efficiency", float, 1.0, src=source),
        gemm_tile=(tile[0], tile[1], tile[2]),
        cores=_get(comp, "compute", "cores", int, 1, src=source),
        min_efficiency=_get(comp, "compute", "min_efficiency", float, 0.0, src=source),
        launch_s=_get(comp, "compute", "launch_us", float, 0.0, src=source) * 1e-6,
        host_s=_get(comp, "compute", "host_us", float, 0.0, src=source) * 1e-6,
        host_blocking=bool(comp.get("host_blocking", False)),
        host_speed=_get(comp, "compute", "host_speed", float, 1.0, src=source),
        capacity_bytes=int(_get(mem, "memory", "capacity_gib", float, src=source) * GiB),
        mem_bw=_get(mem, "memory", "bandwidth_gbps", float, src=source) * 1e9,
        host_link_bw=_get(mem, "memory", "host_link_gbps", float, 0.0, src=source) * 1e9
        or _get(mem, "memory", "bandwidth_gbps", float, src=source) * 1e9,
        topology=topology,
        link_bw=_get(intra, "intra_node", "link_gbps", float, 0.0, src=source) * 1e9,
        links_per_device=_get(intra, "intra_node", "links_per_device", int, max(1, devices - 1), src=source),
        bus_bw=_get(intra, "intra_node", "bus_gbps", float, 0.0, src=source) * 1e9,
        intra_latency_s={str(k): float(v) * 1e-6 for k, v in lat.items()},
        nic_bw=_get(inter, "inter_node", "nic_gbps", float, 0.0, src=source) * 1e9,
        inter_latency_s=_get(inter, "inter_node", "latency_us", float, 0.0, src=source) * 1e-6,
        comm_uses_compute=bool(intra.get("comm_uses_compute", False)),
        all_to_all_copies=_get(intra, "intra_node", "all_to_all_copies", float, 0.0, src=source),
        all_to_all_copies_two_ranks=_get(intra, "intra_node", "all_to_all_copies_two_ranks", float, 0.0, src=source),
        vector_cores=_get(comp, "compute", "vector_cores", int, 0, src=source),
        vector_bytes_per_cycle=_get(comp, "compute", "vector_bytes_per_cycle", float, 0.0, src=source),
        vector_clock_hz=_get(comp, "compute", "vector_clock_mhz", float, 0.0, src=source) * 1e6,
        attention=_attention(comp.get("attention", {}), source),
        source=source, raw=doc)
    for what, v in (("[compute] efficiency", hw.efficiency), ("[compute] min_efficiency", hw.min_efficiency)):
        if not 0 <= v <= 1:
            raise ValueError(f"{source}: {what} = {v}: give a fraction in [0, 1]")
    for what, v in (("[node] devices", hw.devices_per_node), ("[node] compute_resources", hw.compute_resources),
                    ("[compute] cores", hw.cores), ("[intra_node] links_per_device", hw.links_per_device)):
        if v < 1:
            raise ValueError(f"{source}: {what} = {v}: give a positive integer")
    for what, v in (("[compute] launch_us", hw.launch_s), ("[compute] host_us", hw.host_s),
                    ("[memory] host_link_gbps", hw.host_link_bw), ("[intra_node] bus_gbps", hw.bus_bw),
                    ("[inter_node] nic_gbps", hw.nic_bw), ("[inter_node] latency_us", hw.inter_latency_s)):
        if v < 0:
            raise ValueError(f"{source}: {what} is negative: give a number >= 0")
    if hw.host_speed <= 0:
        raise ValueError(f"{source}: [compute] host_speed must be > 0")
    if hw.efficiency == 0:
        raise ValueError(f"{source}: [compute] efficiency must be > 0")
    if topology == "bus" and hw.bus_bw <= 0:
        raise ValueError(f"{source}: [intra_node] topology 'bus' needs bus_gbps > 0")
    if topology != "bus" and hw.link_bw <= 0:
        raise ValueError(f"{source}: [intra_node] topology {topology!r} needs link_gbps > 0")
    if min(hw.all_to_all_copies, hw.all_to_all_copies_two_ranks) < 0:
        raise ValueError(f"{source}: [intra_node] all_to_all_copies and all_to_all_copies_two_ranks must be >= 0")
    if min(hw.vector_cores, hw.vector_bytes_per_cycle, hw.vector_clock_hz) < 0 or (
            hw.vector_cores and not (hw.vector_bytes_per_cycle and hw.vector_clock_hz)):
        raise ValueError(f"{source}: [compute] vector_cores needs positive vector_bytes_per_cycle and "
                         f"vector_clock_mhz")
    if hw.mem_bw <= 0 or hw.capacity_bytes <= 0:
        raise ValueError(f"{source}: [memory] bandwidth_gbps and capacity_gib must be > 0")
    return hw


ATTENTION_KEYS = {"score_bytes": 4.0, "forward_passes": 5.0, "backward_passes": 7.0, "exp_passes": 2.0,
                  "kv_block": 1024.0}


def _attention(table: dict, source: str) -> dict[str, float]:
    """[compute.attention] with its defaults (docs/plan.md, "Ascend hardware"); ValueError for unknown keys or
    values that are not positive numbers."""
    if not isinstance(table, dict):
        raise ValueError(f"{source}: [compute.attention] must be a table")
    out = dict(ATTENTION_KEYS)
    for k, v in table.items():
        if k not in ATTENTION_KEYS:
            raise ValueError(f"{source}: [compute.attention] {k!r} is not a key; use {', '.join(ATTENTION_KEYS)}")
        if isinstance(v, bool) or not isinstance(v, (int, float)) or v <= 0:
            raise ValueError(f"{source}: [compute.attention] {k} = {v!r}: give a positive number")
        out[k] = float(v)
    return out


SHIPPED_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "hardware_files")
# names that stand for a shipped file: the Atlas 800T A2 of MindSpeed-LLM's published figures is the 910B2
# (docs/plan.md, "Ascend hardware")
ALIASES = {"atlas800t-a2": "atlas800t-a2-910b2"}


def shipped() -> list[str]:
    """Names of the hardware files shipped with npudist (``--hardware NAME``), aliases included, sorted."""
    names = [f[:-5] for f in os.listdir(SHIPPED_DIR) if f.endswith(".toml")]
    return sorted(names + list(ALIASES))


def resolve(name_or_path: str) -> str:
    """The file a ``--hardware`` value names: an existing path as given, else a shipped name
    (``atlas800t-a2``, ``atlas800t-a2-910b1`` ... ``-910b4``). Raises FileNotFoundError listing the names."""
    if os.path.isfile(name_or_path):
        return name_or_path
    name = ALIASES.get(name_or_path, name_or_path)
    path = os.path.join(SHIPPED_DIR, name + ".toml")
    if os.sep not in name_or_path and os.path.isfile(path):
        return path
    raise FileNotFoundError(f"hardware file {name_or_path!r} does not exist and is not a shipped name "
                            f"({', '.join(shipped())}); write one as docs/plan.md shows, or derive this "
                            f"machine's with benchmarks/plan_hardware_here.py")


def load(path: str) -> Hardware:
    """Reads the hardware file at ``path``, or the shipped file of that name (:func:`resolve`).
    Raises FileNotFoundError / ValueError naming the file."""
    path = resolve(path)
    with open(path, "rb") as f:
        try:
            doc = tomllib.load(f)
        except tomllib.TOMLDecodeError as e:
            raise ValueError(f"{path}: not valid TOML: {e}") from None
    return parse(doc, path)
