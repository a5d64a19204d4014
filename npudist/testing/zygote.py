"""A warm process that has imported torch (and nothing of npudist) and forks rank processes on
request: the zygote pattern, so a multi-rank test does not pay torch's import (1-3 s per rank on
a 2-core machine) in every rank of every launch.

Used by :func:`npudist.testing.multiproc.run_on_ranks` (``zygote=True``, the default there;
NPUDIST_TEST_ZYGOTE=0 turns it off everywhere). The zygote is started once per test process
(lazily, under the harness's environment policy, with TORCH_DEVICE_BACKEND_AUTOLOAD=0 so
importing torch initialises no device) and speaks line-delimited JSON over its stdin/stdout:

- request ``{"argv": [...], "env": {...}, "cwd": ..., "out": path, "err": path}`` -> the zygote
  forks; the child replaces its environment with ``env``, changes to ``cwd``, sends fd 0/1/2 to
  /dev/null, ``out`` and ``err``, and runs ``argv`` as ``python argv`` would (``-c code``,
  ``-m module`` or a script path), then exits with that program's status after the usual exit handlers; the zygote
  answers ``{"pid": N}``;
- when a child ends the zygote sends ``{"exit": pid, "rc": code}`` (negative: killed by that
  signal, as subprocess reports it).

What a rank cannot get this way: settings read while the interpreter starts or torch is imported
(:data:`IMPORT_TIME_VARS`: TORCH_DISTRIBUTED_DEBUG, TORCH_LOGS, TORCH_CPP_LOG_LEVEL, the OpenMP
thread count, PYTHON* variables) come from the zygote's environment; the harness therefore starts
a rank whose environment sets one of them differently as a fresh interpreter
(:meth:`Zygote.can_fork`). The zygote itself runs under the harness's policy with
OMP_NUM_THREADS=1, as every spawned rank has it.
"""
from __future__ import annotations

import atexit
import json
import os
import select
import signal
import subprocess
import sys
import threading
import time


class ZygoteProcess:
    """A rank forked by the zygote, with the part of ``subprocess.Popen``'s interface the harness
    uses: ``pid``, ``returncode``, ``poll()``, ``wait(timeout)`` (raises
    ``subprocess.TimeoutExpired``), ``send_signal(sig)``."""

    def __init__(self, zygote: Zygote, pid: int, argv):
        self._zygote, self.pid, self.args = zygote, pid, argv
        self.returncode: int | None = None
        self._done = threading.Event()

    def _exited(self, rc: int) -> None:
        self.returncode = rc
        self._done.set()

    def poll(self):
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if not self._done.wait(timeout):
            raise subprocess.TimeoutExpired(self.args, timeout)
        return self.returncode

    def send_signal(self, sig: int) -> None:
        if self.returncode is None:
            os.kill(self.pid, sig)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)


IMPORT_TIME_VARS = ("TORCH_DISTRIBUTED_DEBUG", "TORCH_CPP_LOG_LEVEL", "TORCH_LOGS", "TORCH_LOGS_OUT",
                    "TORCH_LOGS_FORMAT", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "LD_PRELOAD", "LD_LIBRARY_PATH")
"""Variables read while the interpreter starts or torch (with torch.distributed) is imported: a
forked rank would see the zygote's values, not its own. ``import torch.distributed`` sets c10d's
debug level from TORCH_DISTRIBUTED_DEBUG, torch._logging parses TORCH_LOGS*, c10 reads
TORCH_CPP_LOG_LEVEL and the OpenMP runtime its thread count when the libraries load. Besides
these, every PYTHON* variable except PYTHONPATH (which the child applies) counts."""


def import_time_env(env) -> dict[str, str]:
    """The part of ``env`` that only a fresh interpreter honours (see :data:`IMPORT_TIME_VARS`)."""
    return {k: v for k, v in env.items()
            if k in IMPORT_TIME_VARS or (k.startswith("PYTHON") and k not in ("PYTHONPATH", "PYTHONUNBUFFERED"))}


class Zygote:
    """The client side: starts the zygote process and forks ranks through it (thread-safe)."""

    def __init__(self, env: dict[str, str]):
        env = dict(env, TORCH_DEVICE_BACKEND_AUTOLOAD="0")
        self.env = env
        # run as a file, not ``-m npudist.testing.zygote``: that would import the npudist package
        # (it registers npu and reads NPUDIST_* variables) before the ranks' own environments exist
        self.proc = subprocess.Popen([sys.executable, os.path.abspath(__file__)], env=env,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)
        self._lock = threading.Lock()
        self._replies: list[dict] = []
        self._reply_ready = threading.Condition(self._lock)
        self._children: dict[int, ZygoteProcess] = {}
        self._early_exits: dict[int, int] = {}
        ready = self.proc.stdout.readline()
        if json.loads(ready or "{}").get("ready") is not True:
            raise RuntimeError(f"the test zygote did not start (exit {self.proc.poll()}); "
                               "set NPUDIST_TEST_ZYGOTE=0 to launch ranks without it")
        self._reader = threading.Thread(target=self._read, daemon=True, name="npudist-zygote-reader")
        self._reader.start()

    def alive(self) -> bool:
        return self.proc.poll() is None

    def can_fork(self, env) -> bool:
        """Whether a rank with environment ``env`` behaves forked as it would started fresh: it
        sets every import-time variable (:data:`IMPORT_TIME_VARS`) as the zygote had it."""
        return import_time_env(env) == import_time_env(self.env)

    def _read(self):
        for line in self.proc.stdout:
            msg = json.loads(line)
            with self._lock:
                if "exit" in msg:
                    child = self._children.pop(msg["exit"], None)
                    if child is None:
                        self._early_exits[msg["exit"]] = msg["rc"]
                    else:
                        child._exited(msg["rc"])
                else:
                    self._replies.append(msg)
                    self._reply_ready.notify_all()
        # the zygote is gone: its children were reparented and cannot be reaped from here
        with self._lock:
            for child in self._children.values():
                child._exited(-signal.SIGKILL)
            self._children.clear()
            self._reply_ready.notify_all()

    def spawn(self, argv, env, cwd, out: str, err: str) -> ZygoteProcess:
        """Forks one process running ``python argv`` (see the module docstring)."""
        request = json.dumps({"argv": [str(a) for a in argv], "env": dict(env), "cwd": cwd, "out": out, "err": err})
        with self._lock:
            self.proc.stdin.write(request + "\n")
            self.proc.stdin.flush()
            deadline = time.monotonic() + 60
            while not self._replies:
                if not self.alive() or not self._reply_ready.wait(max(0.0, deadline - time.monotonic())):
                    raise RuntimeError("the test zygote did not answer a fork request; set NPUDIST_TEST_ZYGOTE=0")
            reply = self._replies.pop(0)
            if "error" in reply:
                raise RuntimeError(f"the test zygote could not fork: {reply['error']}")
            child = ZygoteProcess(self, reply["pid"], argv)
            if reply["pid"] in self._early_exits:
                child._exited(self._early_exits.pop(reply["pid"]))
            else:
                self._children[reply["pid"]] = child
            return child

    def close(self):
        if self.alive():
            self.proc.stdin.close()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


_ZYGOTE: Zygote | None = None
_ZYGOTE_LOCK = threading.Lock()


def get(env_factory) -> Zygote:
    """This process's zygote, started on first use with ``env_factory()`` as its environment
    (restarted if it died)."""
    global _ZYGOTE
    with _ZYGOTE_LOCK:
        if _ZYGOTE is None or not _ZYGOTE.alive():
            _ZYGOTE = Zygote(env_factory())
            atexit.register(_ZYGOTE.close)
        return _ZYGOTE


# --- the zygote process ------------------------------------------------------------------------

def _exit_status(status: int) -> int:
    if os.WIFSIGNALED(status):
        return -os.WTERMSIG(status)
    return os.WEXITSTATUS(status)


def _autoload(env) -> None:
    """What ``import torch`` does last in a fresh interpreter, done in the forked child instead:
    the zygote imported torch with the ``torch.backends`` entry points off (so that it initialised
    no device), so unless the child's own environment turns them off too
    (TORCH_DEVICE_BACKEND_AUTOLOAD=0) it loads them now, as torch would (``import torch`` in a
    user's script then finds ``npu`` registered, as it does under a fresh interpreter)."""
    if env.get("TORCH_DEVICE_BACKEND_AUTOLOAD", "1") != "1":
        return
    from importlib.metadata import entry_points

    for ep in entry_points(group="torch.backends"):
        ep.load()()


def _child(req) -> None:
    """Runs in the forked child; never returns."""
    code = 1
    try:
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        devnull = os.open(os.devnull, os.O_RDONLY)
        out = os.open(req["out"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        err = os.open(req["err"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        for fd, target in ((devnull, 0), (out, 1), (err, 2)):
            os.dup2(fd, target)
            os.close(fd)
        sys.stdin = open(0, closefd=False)
        sys.stdout = open(1, "w", buffering=1, closefd=False)
        sys.stderr = open(2, "w", buffering=1, closefd=False)
        os.environ.clear()
        os.environ.update(req["env"])
        os.chdir(req["cwd"])
        for p in reversed([p for p in req["env"].get("PYTHONPATH", "").split(os.pathsep) if p]):
            if p not in sys.path:
                sys.path.insert(0, p)
        _autoload(req["env"])
        import runpy

        argv = req["argv"]
        if argv[0] == "-c":
            sys.argv = ["-c", *argv[2:]]
            sys.path.insert(0, "")
            code_text = argv[1]
            runner = lambda: exec(compile(code_text, "<string>", "exec"), {"__name__": "__main__"})  # noqa: E731  (one call)
        elif argv[0] == "-m":
            sys.argv = [argv[1], *argv[2:]]
            sys.path.insert(0, req["cwd"])
            runner = lambda: runpy.run_module(argv[1], run_name="__main__", alter_sys=True)  # noqa: E731  (one call)
        else:
            sys.argv = list(argv)
            sys.path.insert(0, os.path.dirname(os.path.abspath(argv[0])))
            runner = lambda: runpy.run_path(argv[0], run_name="__main__")  # noqa: E731  (one call)
        try:
            runner()
            code = 0
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
            if e.code is not None and not isinstance(e.code, int):
                print(e.code, file=sys.stderr)
        except BaseException:  # noqa: BLE001  (a rank's uncaught exception: print it as python would)
            import traceback

            traceback.print_exc()
            code = 1
        atexit._run_exitfuncs()  # the exit handlers a normal interpreter runs (torch's, npudist's)
    except BaseException:  # noqa: BLE001  (setting the child up failed: say why on its stderr)
        import traceback

        traceback.print_exc()
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)


def serve() -> None:
    """The zygote's loop: fork on each request line, report each child's exit."""
    # the point of the zygote: imported once, inherited by every fork
    import torch.distributed  # noqa: F401  (imports torch too)

    out = sys.stdout
    out.write(json.dumps({"ready": True}) + "\n")
    out.flush()
    stdin = sys.stdin.fileno()
    buf = b""
    children = set()
    while True:
        ready, _, _ = select.select([stdin], [], [], 0.05)
        while children:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
            children.discard(pid)
            out.write(json.dumps({"exit": pid, "rc": _exit_status(status)}) + "\n")
            out.flush()
        if not ready:
            continue
        chunk = os.read(stdin, 65536)
        if not chunk:
            return  # the test process closed the pipe (or died): its ranks were killed or reaped by it
        buf += chunk
        while b"\n" in buf:
            line, buf = buf.split(b"\n", 1)
            req = json.loads(line)
            out.flush()
            sys.stderr.flush()
            try:
                pid = os.fork()
            except OSError as e:
                out.write(json.dumps({"error": str(e)}) + "\n")
                out.flush()
                continue
            if pid == 0:
                _child(req)
            children.add(pid)
            out.write(json.dumps({"pid": pid}) + "\n")
            out.flush()


if __name__ == "__main__":
    # run as a file: its folder (npudist/testing, holding npurun.py, rank.py, ...) must not shadow
    # top-level modules in the children
    del sys.path[0]
    serve()
