"""Two real "hosts" on one machine, for multi-host tests and benchmarks (root only).

Each host is a network namespace (``ip netns``) entered together with a new mount and UTS
namespace (``unshare --mount --uts``): its own hostname, its own tmpfs on ``/dev/shm`` and an
``/etc/hosts`` that names both hosts. A veth pair joins the two namespaces; its ends are
called ``eth0`` on both hosts and carry addresses that exist only inside them
(``10.213.N.1`` and ``10.213.N.2``). Nothing sets NPUDIST_HOSTNAME: hccl tells the hosts
apart by their hostnames, and Gloo crosses the veth link (``GLOO_SOCKET_IFNAME=eth0``).

```python
with TwoHosts(tmp_path) as hosts:
    p = hosts.popen(1, [sys.executable, "-m", "npurun", ...], env=env, stdout=f, stderr=f)
    hosts.kill_host(1)            # SIGKILL every process of host 1 (power loss)
    hosts.pids(0), hosts.shm_entries(0)
```

Each host's /dev/shm is a tmpfs mounted at ``WORKDIR/<host>/shm`` in the machine's own mount
namespace (bind-mounted onto the host's /dev/shm), so a test can list what a host left there
after its processes are gone. ``TwoHosts`` removes the namespaces, the veth pair and the
mounts on exit, after killing whatever still runs in them.

Raises:
    NetnsUnavailable (a RuntimeError) from ``TwoHosts.__enter__``: not root, or ``ip`` /
        ``unshare`` / veth are missing; the message says which.
"""
from __future__ import annotations

import os
import secrets
import shutil
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence

IFNAME = "eth0"


class NetnsUnavailable(RuntimeError):
    """The machine cannot make network namespaces joined by veth (the message says why)."""


def _run(*argv: str) -> str:
    p = subprocess.run(list(argv), capture_output=True, text=True, timeout=30)
    if p.returncode != 0:
        raise NetnsUnavailable(f"`{' '.join(argv)}` failed ({p.returncode}): {p.stderr.strip()}")
    return p.stdout


def unavailable_reason() -> str | None:
    """None if two-host namespaces can be made here, else why not."""
    if os.geteuid() != 0:
        return "needs root (network namespaces, veth and tmpfs mounts)"
    for tool in ("ip", "unshare", "mount"):
        if shutil.which(tool) is None:
            return f"`{tool}` is not installed (apt-get install iproute2 util-linux)"
    return None


class Host:
    """One host: its name, address, namespace and /dev/shm directory (seen from outside)."""

    def __init__(self, index: int, name: str, netns: str, addr: str, shm_dir: str):
        self.index, self.name, self.netns, self.addr, self.shm_dir = index, name, netns, addr, shm_dir


class TwoHosts:
    """Two hosts joined by a veth link (module docstring). Use as a context manager."""

    def __init__(self, workdir: str, names: Sequence[str] = ("hosta", "hostb"), subnet: int | None = None):
        self.workdir = os.path.abspath(str(workdir))
        self.tag = secrets.token_hex(3)
        net = subnet if subnet is not None else 1 + secrets.randbelow(250)
        self.hosts = [Host(i, names[i], f"npd{self.tag}{i}", f"10.213.{net}.{i + 1}",
                           os.path.join(self.workdir, names[i], "shm")) for i in range(2)]
        self.hosts_file = os.path.join(self.workdir, "hosts")
        self._made: list[tuple[str, str]] = []

    # set-up and tear-down
    def __enter__(self) -> TwoHosts:
        why = unavailable_reason()
        if why:
            raise NetnsUnavailable(why)
        try:
            self._setup()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _setup(self) -> None:
        os.makedirs(self.workdir, exist_ok=True)
        with open(self.hosts_file, "w") as f:
            f.write("127.0.0.1 localhost\n" + "".join(f"{h.addr} {h.name}\n" for h in self.hosts))
        for h in self.hosts:
            _run("ip", "netns", "add", h.netns)
            self._made.append(("netns", h.netns))
            os.makedirs(h.shm_dir, exist_ok=True)
            _run("mount", "-t", "tmpfs", "-o", "mode=1777,size=4g", f"npudist-{h.name}-shm", h.shm_dir)
            self._made.append(("mount", h.shm_dir))
        a, b = (f"npd{self.tag}v{i}" for i in range(2))
        _run("ip", "link", "add", a, "type", "veth", "peer", "name", b)
        for h, end in zip(self.hosts, (a, b)):
            _run("ip", "link", "set", end, "netns", h.netns)
            _run("ip", "-n", h.netns, "link", "set", end, "name", IFNAME)
            _run("ip", "-n", h.netns, "addr", "add", f"{h.addr}/24", "dev", IFNAME)
            _run("ip", "-n", h.netns, "link", "set", IFNAME, "up")
            _run("ip", "-n", h.netns, "link", "set", "lo", "up")

    def close(self) -> None:
        """Kills what still runs on either host, then removes namespaces and mounts."""
        for h in self.hosts:
            try:
                self.kill_host(h.index)
            except Exception:  # noqa: BLE001 - best effort on the way out
                pass
        for what, name in reversed(self._made):
            if what == "netns":
                subprocess.run(["ip", "netns", "del", name], capture_output=True, timeout=30)
            else:
                subprocess.run(["umount", "-l", name], capture_output=True, timeout=30)
        self._made.clear()

    # running things on a host
    def command(self, index: int, argv: Sequence[str]) -> list[str]:
        """``argv`` wrapped to run on host ``index`` (its namespaces, hostname, /dev/shm, /etc/hosts)."""
        h = self.hosts[index]
        script = ('mount --bind "$1" /dev/shm && mount --bind "$2" /etc/hosts && hostname "$3" && shift 3 && '
                  'exec "$@"')
        return ["ip", "netns", "exec", h.netns, "unshare", "--mount", "--uts", "--propagation", "private",
                "sh", "-c", script, "sh", h.shm_dir, self.hosts_file, h.name, *argv]

    def popen(self, index: int, argv: Sequence[str], env: Mapping[str, str] | None = None, **kw) -> subprocess.Popen:
        """Starts ``argv`` on host ``index`` in a new session; ``kw`` go to subprocess.Popen."""
        return subprocess.Popen(self.command(index, argv), env=dict(env) if env is not None else None,
                                start_new_session=True, **kw)

    def run(self, index: int, argv: Sequence[str], timeout: float = 60, **kw) -> subprocess.CompletedProcess:
        """Runs ``argv`` on host ``index`` to completion (capture_output, text)."""
        return subprocess.run(self.command(index, argv), capture_output=True, text=True, timeout=timeout, **kw)

    def pids(self, index: int) -> list[int]:
        """Every process in host ``index``'s network namespace."""
        p = subprocess.run(["ip", "netns", "pids", self.hosts[index].netns], capture_output=True, text=True,
                           timeout=30)
        return [int(x) for x in p.stdout.split()]

    def kill_host(self, index: int, timeout: float = 10.0) -> list[int]:
        """SIGKILLs every process of host ``index`` (as a power loss would end them), until none is left;
        returns the pids killed."""
        killed: list[int] = []
        deadline = time.monotonic() + timeout
        while True:
            pids = self.pids(index)
            if not pids:
                return killed
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                    killed.append(pid)
                except ProcessLookupError:
                    pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"host {self.hosts[index].name}: processes {pids} survive SIGKILL")
            time.sleep(0.05)

    def shm_entries(self, index: int) -> list[str]:
        """What is in host ``index``'s /dev/shm."""
        return sorted(os.listdir(self.hosts[index].shm_dir))
