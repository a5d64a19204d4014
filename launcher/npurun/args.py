"""npurun's command line: torchrun's parser plus npurun's own flags, and its validation.

The parser is ``torch.distributed.run.get_args_parser()`` (so every torchrun flag, its
``--a_b`` spelling and its ``PET_*`` environment defaults work unchanged) with
``--nproc`` as a short form of ``--nproc-per-node``, ``--dry-run``,
``--rdzv-connect-timeout`` and the node metrics endpoint's ``--metrics-port``,
``--metrics-addr`` and ``--metrics-linger`` added. ``validate`` turns every bad value into one
message that names the flag, the value and what to do, before anything starts.
"""
from __future__ import annotations

import argparse
import os
import re
import shutil

from torch.distributed.elastic.multiprocessing import Std
from torch.distributed.elastic.rendezvous.utils import parse_rendezvous_endpoint
from torch.distributed.run import get_args_parser

from npudist import _env

DEFAULT_CONNECT_TIMEOUT = 60.0


def _shown(name: str) -> str:
    """A variable's value for a message: as set (an empty value shows as ''), else <unset>."""
    v = _env.raw(name, keep_empty=True)
    return "<unset>" if v is None else repr(v) if v == "" else v
_TAG_RE = re.compile(r"^[A-Za-z0-9_.]{1,64}$")


class UsageError(ValueError):
    """A bad npurun argument or environment value; the message says what to change."""


def build_parser() -> argparse.ArgumentParser:
    """torchrun's argument parser, renamed npurun, with npurun's extra flags."""
    parser = get_args_parser()
    parser.prog = "npurun"
    parser.description = (
        "Launch a distributed job on the local npus (torch.distributed.run's elastic agent "
        "underneath). Accepts torchrun's flags; every output line is prefixed with its rank, "
        "and a summary closes the run.")
    parser.add_argument("--nproc", dest="nproc_per_node", default=argparse.SUPPRESS,
                        help="Short form of --nproc-per-node: an integer, 'npu' or 'auto' (all visible npus).")
    parser.add_argument("--dry-run", "--dry_run", dest="dry_run", action="store_true",
                        help="Print the plan (ranks, devices, environment, rendezvous) and exit without starting anything.")
    parser.add_argument("--rdzv-connect-timeout", "--rdzv_connect_timeout", dest="rdzv_connect_timeout", type=float,
                        default=None,
                        help="Seconds to wait for another node's rendezvous endpoint to accept a connection before "
                             "failing (default: read_timeout from --rdzv-conf, else 60).")
    parser.add_argument("--metrics-port", "--metrics_port", dest="metrics_port", type=int, default=None,
                        help="Serve one Prometheus endpoint for this node's ranks on this port (0: any free port; "
                             "the URL is printed). Default: off (docs/metrics.md).")
    parser.add_argument("--metrics-addr", "--metrics_addr", dest="metrics_addr", default=None,
                        help="Address the --metrics-port endpoint binds (default 127.0.0.1; 0.0.0.0 for every "
                             "interface).")
    parser.add_argument("--metrics-linger", "--metrics_linger", dest="metrics_linger", type=float, default=0.0,
                        help="Seconds the --metrics-port endpoint keeps serving after the job ended, so Prometheus "
                             "records how every rank ended (a signal ends the wait; default 0).")
    parser.add_argument("--inject-fault", "--inject_fault", dest="inject_fault", action="append", default=None,
                        metavar="SPEC",
                        help="Inject a fault into the ranks, e.g. rank=1,step=50,kind=kill (repeatable; ';' separates "
                             "specs too). Added to NPUDIST_FAULT_INJECT; see docs/fault_injection.md.")
    parser.add_argument("--profile", dest="profile_dir", default=None,
                        help="Profile every rank with torch.profiler (CPU + npu) into DIR/rank<R>.json; steps are "
                             "counted by npudist.profiler.step() calls (docs/profiling.md). Merge with "
                             "`python -m npudist.profiler merge DIR -o job.json`.")
    parser.add_argument("--profile-steps", "--profile_steps", dest="profile_steps", default=None,
                        help="With --profile: record steps A..B-1, given as A:B (default 1:4).")
    return parser


def fault_specs(args: argparse.Namespace) -> str:
    """NPUDIST_FAULT_INJECT for the ranks: the inherited value plus every --inject-fault, checked.

    Raises UsageError naming the flag (or the variable) and the wrong part of the spec.
    """
    from npudist import fault_inject

    pieces = []
    inherited = _env.get_str(fault_inject.ENV, "")
    for source, text in [(fault_inject.ENV, inherited)] + [("--inject-fault", f) for f in args.inject_fault or ()]:
        try:
            fault_inject.parse(text, source)
        except fault_inject.FaultSpecError as e:
            raise UsageError(str(e)) from None
        if text.strip():
            pieces.append(text.strip().strip(";"))
    return ";".join(pieces)


def parse_nnodes(value: str) -> tuple[int, int]:
    """'N' or 'MIN:MAX' -> (min_nodes, max_nodes)."""
    parts = value.split(":")
    try:
        if len(parts) == 1:
            lo = hi = int(parts[0])
        elif len(parts) == 2:
            lo, hi = int(parts[0]), int(parts[1])
        else:
            raise ValueError
    except ValueError:
        raise UsageError(f"--nnodes={value!r} is not a node count: use N or MIN:MAX (e.g. --nnodes 2)") from None
    if not 0 < lo <= hi:
        raise UsageError(f"--nnodes={value!r}: need 0 < MIN <= MAX (e.g. --nnodes 2 or --nnodes 1:4)")
    return lo, hi


def resolve_nproc(value: str, visible_npus: int) -> int:
    """The number of local ranks for --nproc-per-node ``value`` given the visible npu count.

    Accepts an integer, 'npu' or 'auto' (both: every visible npu) and 'cpu' (one rank per
    core, as torchrun). Raises UsageError for anything else, for 0, and for more ranks
    than visible npus.
    """
    text = str(value).strip()
    if text in ("npu", "auto"):
        n = visible_npus
        if n == 0:
            raise UsageError(f"--nproc-per-node {text}: no npu is visible "
                             f"(NPUDIST_DEVICE_COUNT={_env.get_str('NPUDIST_DEVICE_COUNT', '8')}, "
                             f"ASCEND_RT_VISIBLE_DEVICES={_shown('ASCEND_RT_VISIBLE_DEVICES')})")
        return n
    if text == "cpu":
        n = len(os.sched_getaffinity(0))
    elif text in ("gpu", "xpu", "cuda"):
        raise UsageError(f"--nproc-per-node {text}: npurun starts ranks on npus; use an integer, 'npu' or 'auto'")
    else:
        try:
            n = int(text)
        except ValueError:
            raise UsageError(f"--nproc-per-node={text!r} is not valid: use an integer, 'npu' or 'auto'") from None
        if n < 1:
            raise UsageError(f"--nproc-per-node={text}: need at least 1 rank per node")
    if n > visible_npus:
        raise UsageError(
            f"--nproc-per-node {n} asks for {n} local ranks but only {visible_npus} npu(s) are visible "
            f"(NPUDIST_DEVICE_COUNT={_env.get_str('NPUDIST_DEVICE_COUNT', '8 (default)')}, "
            f"ASCEND_RT_VISIBLE_DEVICES={_shown('ASCEND_RT_VISIBLE_DEVICES')}): "
            f"lower --nproc-per-node, or make more npus visible")
    return n


def parse_std(flag: str, value: str, nproc: int) -> dict[int, Std]:
    """--redirects / --tee value -> {local_rank: Std}, with a clear error for bad input."""
    try:
        parsed = Std.from_str(value)
    except Exception:
        raise UsageError(f"{flag}={value!r} is not valid: use 0-3 for every rank (0 none, 1 stdout, 2 stderr, "
                         f"3 both) or LOCAL_RANK:N pairs, e.g. {flag} 0:3,1:1") from None
    if isinstance(parsed, dict):
        bad = sorted(r for r in parsed if not 0 <= r < nproc)
        if bad:
            raise UsageError(f"{flag}={value!r} names local rank(s) {bad}, but there are {nproc} local ranks "
                             f"(0..{nproc - 1})")
        return {r: parsed.get(r, Std.NONE) for r in range(nproc)}
    return dict.fromkeys(range(nproc), parsed)


def parse_ranks_filter(value: str, nproc: int) -> set[int] | None:
    """--local-ranks-filter value -> set of local ranks (None: show all)."""
    if not value:
        return None
    try:
        ranks = {int(v) for v in value.split(",")}
    except ValueError:
        raise UsageError(f"--local-ranks-filter={value!r}: use a comma-separated list of local ranks, "
                         f"e.g. --local-ranks-filter 0,1") from None
    bad = sorted(r for r in ranks if not 0 <= r < nproc)
    if bad:
        raise UsageError(f"--local-ranks-filter={value!r} names local rank(s) {bad}, but there are {nproc} "
                         f"local ranks (0..{nproc - 1})")
    return ranks


def validate(args: argparse.Namespace) -> None:
    """Checks everything that does not need the device count; raises UsageError."""
    min_nodes, max_nodes = parse_nnodes(args.nnodes)
    if args.standalone and max_nodes > 1:
        raise UsageError("--standalone starts a single-node job; drop it or use --nnodes 1 "
                         "(several nodes need --rdzv-backend c10d --rdzv-endpoint HOST:PORT)")
    if args.max_restarts < 0:
        raise UsageError(f"--max-restarts={args.max_restarts}: must be >= 0")
    if not args.monitor_interval > 0:
        raise UsageError(f"--monitor-interval={args.monitor_interval}: must be > 0 seconds")
    if args.shutdown_timeout is not None and args.shutdown_timeout < 0:
        raise UsageError(f"--shutdown-timeout={args.shutdown_timeout}: must be >= 0 seconds")
    if args.rdzv_connect_timeout is not None and not args.rdzv_connect_timeout > 0:
        raise UsageError(f"--rdzv-connect-timeout={args.rdzv_connect_timeout}: must be > 0 seconds")
    if args.rdzv_backend not in ("static", "c10d", "etcd", "etcd-v2"):
        raise UsageError(f"--rdzv-backend={args.rdzv_backend!r}: use c10d (or static with --master-addr/--master-port)")
    if args.master_port is not None and not 0 < args.master_port < 65536:
        raise UsageError(f"--master-port={args.master_port}: must be a port number 1..65535")
    if args.rdzv_backend == "static":
        if not 0 <= args.node_rank < max_nodes:
            raise UsageError(f"--node-rank={args.node_rank}: must be in 0..{max_nodes - 1} for --nnodes {args.nnodes}")
        if max_nodes > 1 and min_nodes != max_nodes:
            raise UsageError("an elastic --nnodes MIN:MAX needs a dynamic rendezvous: add --rdzv-backend c10d "
                             "--rdzv-endpoint HOST:PORT")
    elif not args.standalone and max_nodes > 1 and not args.rdzv_endpoint:
        raise UsageError(f"--rdzv-backend {args.rdzv_backend} with --nnodes {args.nnodes} needs "
                         "--rdzv-endpoint HOST:PORT (the same on every node)")
    if args.rdzv_endpoint:
        try:
            host, port = parse_rendezvous_endpoint(args.rdzv_endpoint, default_port=-1)
        except ValueError as e:
            raise UsageError(f"--rdzv-endpoint={args.rdzv_endpoint!r}: {e}; use HOST:PORT") from None
        if port == -1 and args.rdzv_backend == "static":
            raise UsageError(f"--rdzv-endpoint={args.rdzv_endpoint!r} has no port: use HOST:PORT")
    if args.log_dir and os.path.exists(args.log_dir) and not os.path.isdir(args.log_dir):
        raise UsageError(f"--log-dir={args.log_dir!r} is a file, not a directory")
    if args.logs_specs:
        raise UsageError("--logs-specs is not supported: npurun writes every rank's output to per-rank files "
                         "itself (choose the directory with --log-dir)")
    if args.numa_binding:
        raise UsageError("--numa-binding binds ranks to the NUMA node of a CUDA device; it does not apply to npus")
    if args.virtual_local_rank:
        raise UsageError("--virtual-local-rank narrows CUDA_VISIBLE_DEVICES; with npus every rank would use npu:0. "
                         "Use LOCAL_RANK with torch.npu.set_device (ASCEND_RT_VISIBLE_DEVICES narrows the npus)")
    _check_metrics(args)
    _check_profile(args)
    tag = _env.raw("NPUDIST_JOB_TAG", keep_empty=True)
    if tag is not None and not _TAG_RE.match(tag):
        raise UsageError(f"NPUDIST_JOB_TAG={tag!r} is not a valid job tag: use 1-64 letters, digits, '_' or '.'")
    _check_entrypoint(args)


def _check_metrics(args: argparse.Namespace) -> None:
    port, addr, linger = (getattr(args, k, None) for k in ("metrics_port", "metrics_addr", "metrics_linger"))
    if port is None:
        if addr is not None or linger:
            flag = "--metrics-addr" if addr is not None else "--metrics-linger"
            raise UsageError(f"{flag} needs --metrics-port PORT (the node's metrics endpoint is off without it)")
        return
    if not 0 <= port <= 65535:
        raise UsageError(f"--metrics-port={port}: must be a port number 1..65535, or 0 for any free port")
    if addr is not None:
        from npudist.watchdog.metrics.server import check_addr
        try:
            check_addr(addr, "--metrics-addr")
        except ValueError as e:
            raise UsageError(str(e)) from None
    if linger is not None and not linger >= 0:
        raise UsageError(f"--metrics-linger={linger}: must be >= 0 seconds")


def _check_profile(args: argparse.Namespace) -> None:
    out_dir, steps = getattr(args, "profile_dir", None), getattr(args, "profile_steps", None)
    if out_dir is None:
        if steps is not None:
            raise UsageError("--profile-steps needs --profile DIR (the folder the per-rank traces go to)")
        return
    if os.path.exists(out_dir) and not os.path.isdir(out_dir):
        raise UsageError(f"--profile={out_dir!r} is a file, not a directory")
    parent = out_dir if os.path.isdir(out_dir) else os.path.dirname(os.path.abspath(out_dir))
    while parent and not os.path.exists(parent):
        parent = os.path.dirname(parent)
    if not os.access(parent, os.W_OK):
        raise UsageError(f"--profile={out_dir!r}: {parent!r} is not writable; choose a folder you can write")
    if steps is not None:
        from npudist.profiler.steps import parse_steps
        try:
            parse_steps(steps)
        except ValueError as e:
            raise UsageError(f"--profile-steps: {e}") from None


def _check_entrypoint(args: argparse.Namespace) -> None:
    script = args.training_script
    if args.module:
        if args.no_python:
            raise UsageError("-m/--module and --no-python cannot be used together")
        return
    if args.no_python and not args.run_path:
        if os.sep not in script and shutil.which(script) is None:
            raise UsageError(f"--no-python: program {script!r} was not found on PATH")
        if os.sep in script and not os.access(script, os.X_OK):
            raise UsageError(f"--no-python: {script!r} is not an executable file")
        return
    if not os.path.isfile(script):
        hint = " (to run a module, add -m)" if not script.endswith(".py") else ""
        raise UsageError(f"training script {script!r} not found{hint}")
