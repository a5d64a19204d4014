"""Rendezvous settings and the reachability check that bounds a wrong address.

A c10d client pointed at an address where nothing listens (or that is unroutable) would
otherwise wait inside TCPStore for minutes; a static-rendezvous node pointed at a wrong
master address waits up to 900 s. Before starting the agent, npurun connects to the
endpoint of any node it does not host itself and fails after ``--rdzv-connect-timeout``
seconds with a message naming the endpoint.
"""
from __future__ import annotations

import ipaddress
import socket
import time
import uuid

from torch.distributed.elastic.rendezvous.utils import parse_rendezvous_endpoint


class RendezvousUnreachable(RuntimeError):
    """The rendezvous endpoint could not be reached within the connect timeout."""


def parse_conf(text: str) -> dict[str, str]:
    """--rdzv-conf 'k1=v1,k2=v2' -> dict; raises ValueError naming the bad entry."""
    conf: dict[str, str] = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"--rdzv-conf entry {item!r} is not KEY=VALUE (e.g. --rdzv-conf join_timeout=300)")
        conf[key.strip()] = value.strip()
    return conf


def apply_defaults(args) -> None:
    """torchrun's choice of rendezvous: --standalone, or a single-node job without
    --master-port, uses a private c10d store on a free local port."""
    if args.standalone:
        args.rdzv_backend, args.rdzv_endpoint, args.rdzv_id = "c10d", "localhost:0", str(uuid.uuid4())
        return
    max_nodes = int(args.nnodes.split(":")[-1])
    if args.rdzv_backend == "static" and not args.rdzv_endpoint and args.master_port is None and max_nodes == 1:
        args.rdzv_backend, args.rdzv_endpoint, args.rdzv_id = "c10d", "localhost:0", str(uuid.uuid4())
    if args.master_port is None:
        args.master_port = 29500


def endpoint(args) -> str:
    """HOST:PORT of the rendezvous store (static: --master-addr/--master-port unless --rdzv-endpoint)."""
    if args.rdzv_backend == "static" and not args.rdzv_endpoint:
        return f"{args.master_addr}:{args.master_port}"
    return args.rdzv_endpoint


def is_local_address(host: str) -> bool:
    """True if ``host`` names this machine: loopback, or an address a socket can bind here."""
    if host in ("localhost", socket.gethostname()):
        return True
    try:
        if ipaddress.ip_address(host).is_loopback:
            return True
    except ValueError:
        pass
    try:
        infos = socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)
    except (socket.gaierror, UnicodeError):
        return False
    for family, _, _, _, sockaddr in infos:
        try:
            with socket.socket(family, socket.SOCK_STREAM) as s:
                s.bind((sockaddr[0], 0))
            return True
        except OSError:
            continue
    return False


def _truthy(value: str) -> bool | None:
    v = value.strip().lower()
    if v in ("1", "true", "t", "yes", "y"):
        return True
    if v in ("0", "false", "f", "no", "n"):
        return False
    return None


def remote_endpoint(args, conf: dict[str, str]) -> tuple[str, int] | None:
    """(host, port) this node must connect to as a client, or None when it hosts the store."""
    host, port = parse_rendezvous_endpoint(endpoint(args), default_port=29400)
    if args.rdzv_backend == "static":
        return (host, port) if args.node_rank != 0 else None
    if args.rdzv_backend != "c10d" or port == 0:
        return None
    is_host = _truthy(conf.get("is_host", "")) if "is_host" in conf else None
    if is_host is True or (is_host is None and is_local_address(host)):
        return None
    return host, port


def wait_reachable(host: str, port: int, timeout: float) -> float:
    """Connects to host:port until it accepts, for at most ``timeout`` s; returns the seconds waited.

    Raises:
        RendezvousUnreachable: the name does not resolve, or nothing accepted in time.
    """
    start = time.monotonic()
    deadline = start + timeout
    try:
        socket.getaddrinfo(host, port, proto=socket.IPPROTO_TCP)
    except (socket.gaierror, UnicodeError) as e:
        raise RendezvousUnreachable(
            f"rendezvous host {host!r} does not resolve ({e}); check --rdzv-endpoint / --master-addr") from None
    last: Exception | None = None
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            break
        try:
            with socket.create_connection((host, port), timeout=min(5.0, remaining)):
                return time.monotonic() - start
        except OSError as e:
            last = e
        time.sleep(min(0.5, max(0.0, deadline - time.monotonic())))
    raise RendezvousUnreachable(
        f"cannot reach the rendezvous endpoint {host}:{port} within {timeout:g} s (last error: {last}). "
        f"Check that --rdzv-endpoint/--master-addr is node 0's address as seen from this node, that npurun "
        f"is running there, that port {port} is open between the hosts, and that every node passes the same "
        f"endpoint; --rdzv-connect-timeout sets how long to wait")


def own_store(args, conf: dict[str, str], max_nodes: int):
    """For a several-node c10d job on the node that hosts the store: npurun's own TCPStore
    server on the endpoint, or None (another process hosts it, or not such a job).

    Sets ``conf["is_host"] = "0"`` when npurun hosts it: the agent connects to npurun's
    server as a client, so the store lives as long as npurun does (see jobwatch.py).
    """
    from datetime import timedelta

    from torch.distributed import TCPStore

    if args.rdzv_backend != "c10d" or max_nodes <= 1 or conf.get("store_type", "tcp").strip().lower() != "tcp":
        return None
    host, port = parse_rendezvous_endpoint(endpoint(args), default_port=29400)
    if port == 0:
        return None
    is_host = _truthy(conf["is_host"]) if "is_host" in conf else None
    if is_host is False or (is_host is None and not is_local_address(host)):
        return None
    try:
        server = TCPStore(host, port, is_master=True, multi_tenant=True, wait_for_workers=False,
                          timeout=timedelta(seconds=float(conf.get("read_timeout", 60))))
    except Exception:  # the port is taken (another npurun on this machine hosts it): be a client, as torch
        return None
    conf["is_host"] = "0"
    return server
