"""Launch N real rank processes on this machine and collect what they report.

The one multi-rank harness of npudist's tests and benchmarks (in the spirit of PyTorch's
``common_distributed.MultiProcessTestCase``, but process-per-rank via ``subprocess`` so a rank
can crash, hang or be killed without taking the test runner along). Every launch gets the same
environment policy (:func:`rank_env`), a free rendezvous port on 127.0.0.1 (env:// rendezvous:
RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT), its own
flight-recorder dump path, a hard timeout, and returns a :class:`Ranks` with every rank's exit
code, stdout, stderr and ``RESULT`` lines. Launching through ``npurun`` itself lives in
:mod:`npudist.testing.npurun`; the in-rank side (``report``, ``Checker``) in
:mod:`npudist.testing.checks`.

Example (a test)::

    from npudist.testing.multiproc import launch

    r = launch("my_worker.py", 4, args=["quick"], env={"MY_KNOB": "1"}, timeout=240)
    assert r.ok(), r.explain()
    for rank in range(4):
        (summary,) = r.results(rank)          # the rank's ``RESULT {...}`` lines, parsed
        assert not summary["failures"], summary

and in the worker::

    from npudist.testing.checks import Checker
    check = Checker()
    check.close(torch.ones(2), torch.ones(2), "ones")
    check.report()                            # prints RESULT {"kind": "summary", ...}

The rank code can also be a function of the test module, beside its asserts
(:func:`run_on_ranks`, in the spirit of ``MultiProcessTestCase``)::

    def _sum_ranks(scale):                        # runs on every rank, process group initialised
        x = torch.ones(2, device="npu") * scale
        dist.all_reduce(x)
        return x.tolist()

    def test_sum():
        r = run_on_ranks(_sum_ranks, 2, 3.0).check()
        assert r.values() == [[6.0, 6.0]] * 2

For a job that must be observed while it runs (a benchmark scraping the ranks' endpoints),
``job = start(argv, n); ...; r = job.wait(timeout)``.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Mapping, Sequence

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
"""The repository root: the ranks' working directory and the head of their PYTHONPATH."""

RESULT_PREFIX = "RESULT "
"""A rank reports a result by printing one line: this prefix, then one JSON object."""

CLEARED_PREFIXES = ("NPUDIST_", "HCCL_", "TORCH_HCCL_", "ASCEND_", "PET_", "TORCHELASTIC_")
"""Variables inherited from the caller's environment that a launch drops: npudist's own knobs,
the hccl/torch_npu ones, the simulated device selection and torchrun/npurun's agent settings.
A test that wants one passes it explicitly in ``env=``."""

CLEARED_NAMES = ("OMP_NUM_THREADS", "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "GROUP_RANK",
                 "ROLE_RANK", "MASTER_ADDR", "MASTER_PORT", "TORCHELASTIC_RUN_ID")


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port that was free on ``host`` a moment ago (the OS picks it; bind-and-release, so a
    race with another process is possible but rare)."""
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def clean_env(env: Mapping[str, str] | None = None, base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment policy shared by every launch (spawned ranks and npurun alike).

    Starts from ``base`` (default ``os.environ``), drops :data:`CLEARED_PREFIXES` /
    :data:`CLEARED_NAMES`, puts the repository first on PYTHONPATH (so ranks import ``npudist``,
    ``npurun``, ``tests.*`` and ``benchmarks`` from this checkout), then applies ``env``
    (the caller's explicit settings win). A value of ``None`` in ``env`` removes that variable.
    """
    out = {k: v for k, v in (os.environ if base is None else base).items()
           if not k.startswith(CLEARED_PREFIXES) and k not in CLEARED_NAMES}
    launcher = os.path.join(REPO, "launcher")
    out["PYTHONPATH"] = os.pathsep.join(p for p in (REPO, launcher, out.get("PYTHONPATH", "")) if p)
    for k, v in (env or {}).items():
        if v is None:
            out.pop(k, None)
        else:
            out[k] = str(v)
    return out


def inherited(*prefixes: str) -> dict[str, str]:
    """The caller's variables whose names start with one of ``prefixes``, to pass on explicitly
    (``launch(..., env=inherited("HCCL_"))``: a benchmark run as ``HCCL_BUFFSIZE=4 python ...``
    keeps that setting although the policy clears HCCL_* by default)."""
    return {k: v for k, v in os.environ.items() if k.startswith(prefixes)}


def rank_env(rank: int, nranks: int, port: int, env: Mapping[str, str] | None = None,
             host: str | None = None, fr_prefix: str | None = None) -> dict[str, str]:
    """The full environment of one spawned rank: :func:`clean_env`, one intra-op thread
    (OMP_NUM_THREADS=1, as torchrun sets for several ranks per machine), the env:// rendezvous
    variables, the flight-recorder dump path (TORCH_HCCL_DEBUG_INFO_TEMP_FILE) and, when
    ``host`` is given, NPUDIST_HOSTNAME (a simulated host). ``env`` is applied last."""
    e = clean_env()
    e.update(OMP_NUM_THREADS="1", RANK=str(rank), WORLD_SIZE=str(nranks), LOCAL_RANK=str(rank),
             LOCAL_WORLD_SIZE=str(nranks), MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    if fr_prefix:
        e["TORCH_HCCL_DEBUG_INFO_TEMP_FILE"] = fr_prefix
    if host is not None:
        e["NPUDIST_HOSTNAME"] = host
    for k, v in (env or {}).items():
        if v is None:
            e.pop(k, None)
        else:
            e[k] = str(v)
    return e


def parse_results(text: str) -> list[dict]:
    """The JSON objects of the ``RESULT {...}`` lines in ``text``, in order."""
    return [json.loads(line[len(RESULT_PREFIX):]) for line in text.splitlines() if line.startswith(RESULT_PREFIX)]


class Ranks:
    """The finished ranks of one launch.

    Attributes: ``returncodes`` (list of int; negative = killed by that signal), ``stdout`` and
    ``stderr`` (list of str per rank), ``elapsed`` (wall seconds from start to the last exit),
    ``timed_out`` (True when the launch's timeout ended the ranks), ``argv``.
    """

    def __init__(self, argv, returncodes, stdout, stderr, elapsed, timed_out):
        self.argv = list(argv)
        self.returncodes = list(returncodes)
        self.stdout = list(stdout)
        self.stderr = list(stderr)
        self.elapsed = elapsed
        self.timed_out = timed_out

    def __len__(self):
        return len(self.returncodes)

    def ok(self) -> bool:
        """Every rank exited 0 within the timeout."""
        return not self.timed_out and all(rc == 0 for rc in self.returncodes)

    def results(self, rank: int) -> list[dict]:
        """The rank's ``RESULT`` objects in the order it printed them."""
        return parse_results(self.stdout[rank])

    def values(self) -> list:
        """Each rank's return value from :func:`run_on_ranks` (None for a rank that returned
        nothing or did not finish), indexed by rank."""
        out = []
        for rank in range(len(self)):
            found = [r for r in self.results(rank) if r.get("kind") == "return"]
            out.append(found[-1]["value"] if found else None)
        return out

    def summary(self, rank: int) -> dict | None:
        """The rank's last ``{"kind": "summary"}`` result (what ``Checker.report`` prints), or None."""
        found = [r for r in self.results(rank) if r.get("kind") == "summary"]
        return found[-1] if found else None

    def explain(self, tail: int = 3000) -> str:
        """A readable account for an assertion message: the command, whether the launch timed out,
        and per rank its exit code (and signal name) and the last ``tail`` characters of its
        stdout and stderr."""
        parts = [f"{' '.join(map(str, self.argv))}: {len(self)} ranks, {self.elapsed:.1f} s, "
                 f"timed out: {self.timed_out}"]
        for r, (rc, out, err) in enumerate(zip(self.returncodes, self.stdout, self.stderr)):
            how = f"exit {rc}"
            if rc is not None and rc < 0:
                try:
                    how += f" ({signal.Signals(-rc).name})"
                except ValueError:
                    pass
            parts.append(f"--- rank {r} {how}\n[stdout]\n{out[-tail:]}\n[stderr]\n{err[-tail:]}")
        return "\n".join(parts)

    def check(self, what: str = "") -> Ranks:
        """Raises AssertionError with :meth:`explain` unless :meth:`ok`, and also when a rank
        reported a summary with failures; returns self."""
        if not self.ok():
            raise AssertionError(f"{what or 'ranks'} failed\n{self.explain()}")
        for rank in range(len(self)):
            s = self.summary(rank)
            if s and s.get("failures"):
                raise AssertionError(f"{what or 'ranks'}: rank {rank} reported failures:\n"
                                     + "\n".join(s["failures"]) + "\n" + self.explain(1500))
        return self


class Job:
    """Ranks started by :func:`start`, still running. ``wait(timeout)`` returns :class:`Ranks`.

    stdout/stderr go to files in a per-launch temporary directory (not pipes: a rank that prints
    a lot cannot block on a full pipe while the others wait for it in a collective); the
    directory, including the flight-recorder dumps, is removed by ``wait`` unless ``keep_dir``.
    """

    def __init__(self, argv, nranks, env=None, hosts=None, cwd=None, keep_dir=False, env_per_rank=None,
                 zygote=False):
        if nranks < 1:
            raise ValueError(f"nranks must be >= 1, got {nranks}")
        if hosts is not None and len(hosts) != nranks:
            raise ValueError(f"hosts names {len(hosts)} hosts for {nranks} ranks; give one per rank")
        self.argv = [str(a) for a in argv]
        self.nranks = nranks
        self.keep_dir = keep_dir
        self.dir = tempfile.mkdtemp(prefix="npudist-ranks-")
        self.fr_prefix = os.path.join(self.dir, "fr_rank_")
        self.port = free_port()
        self._files, self.procs = [], []
        self._t0 = time.monotonic()
        warm = None
        if zygote:
            from npudist import _env  # (imports npudist, and so torch: only where ranks are forked warm)

            if _env.get_bool("NPUDIST_TEST_ZYGOTE", True):
                from npudist.testing import zygote as _zygote

                warm = _zygote.get(lambda: clean_env({"OMP_NUM_THREADS": "1"}))
        try:
            for r in range(nranks):
                e = rank_env(r, nranks, self.port, env, hosts[r] if hosts else None, self.fr_prefix)
                if env_per_rank:
                    e.update({k: str(v) for k, v in env_per_rank(r).items()})
                out = open(os.path.join(self.dir, f"rank{r}.out"), "w+")
                err = open(os.path.join(self.dir, f"rank{r}.err"), "w+")
                self._files.append((out, err))
                if warm is not None and warm.can_fork(e):
                    self.procs.append(warm.spawn(self.argv, e, cwd or REPO, out.name, err.name))
                else:
                    self.procs.append(subprocess.Popen([sys.executable, *self.argv], env=e, stdout=out, stderr=err,
                                                       stdin=subprocess.DEVNULL, cwd=cwd or REPO))
        except BaseException:
            self.kill()
            self._close()
            raise

    @property
    def pids(self) -> list[int]:
        return [p.pid for p in self.procs]

    def poll(self) -> list[int | None]:
        return [p.poll() for p in self.procs]

    def kill(self, sig: int = signal.SIGKILL) -> None:
        """Sends ``sig`` to every rank still running."""
        for p in self.procs:
            if p.poll() is None:
                try:
                    p.send_signal(sig)
                except ProcessLookupError:
                    pass

    def wait(self, timeout: float = 240.0) -> Ranks:
        """Waits until every rank exits or ``timeout`` seconds (from the start) pass; on timeout
        kills them all (``Ranks.timed_out``). Always reaps every rank, also on KeyboardInterrupt."""
        deadline = self._t0 + timeout
        timed_out = False
        try:
            for p in self.procs:
                try:
                    p.wait(timeout=max(0.1, deadline - time.monotonic()))
                except subprocess.TimeoutExpired:
                    timed_out = True
                    break
        finally:
            if timed_out or any(p.poll() is None for p in self.procs):
                self.kill()
            for p in self.procs:
                p.wait()
        elapsed = time.monotonic() - self._t0
        outs, errs = [], []
        for out, err in self._files:
            for f, dest in ((out, outs), (err, errs)):
                f.flush()
                f.seek(0)
                dest.append(f.read())
        self._close()
        return Ranks(self.argv, [p.returncode for p in self.procs], outs, errs, elapsed, timed_out)

    def _close(self):
        for pair in self._files:
            for f in pair:
                f.close()
        if not self.keep_dir:
            shutil.rmtree(self.dir, ignore_errors=True)


def start(argv: Sequence[str], nranks: int, env: Mapping[str, str] | None = None,
          hosts: Sequence[str] | None = None, cwd: str | None = None, keep_dir: bool = False,
          env_per_rank=None, zygote: bool = True) -> Job:
    """Starts ``python *argv`` as ``nranks`` ranks and returns at once (a :class:`Job`).

    argv: a script path and its arguments, ``["-m", "module", ...]`` or ``["-c", code, ...]``;
    items are str()-ed.
    env: explicit variables on top of the policy (:func:`rank_env`); ``None`` values unset.
    hosts: one NPUDIST_HOSTNAME per rank (simulated hosts), e.g. ``["a", "a", "b", "b"]``.
    env_per_rank: optional ``f(rank) -> dict`` of extra variables for one rank.
    zygote: True (default) forks each rank from the warm zygote (:mod:`npudist.testing.zygote`:
    torch already imported, the ``torch.backends`` autoload run in the rank under its own
    environment); a rank whose environment sets an import-time variable
    (``zygote.IMPORT_TIME_VARS``: TORCH_DISTRIBUTED_DEBUG, TORCH_LOGS, ...) differently from the
    zygote's starts fresh by itself. False starts ``[sys.executable, *argv]`` as a fresh
    interpreter always: for tests whose point is the interpreter's own start (a ``.pth`` hook, the
    cost of ``import torch``) or that check a rank's parent process. NPUDIST_TEST_ZYGOTE=0 makes
    every launch fresh.
    Raises ValueError for ``nranks < 1`` or a ``hosts`` list of the wrong length.
    """
    return Job(argv, nranks, env=env, hosts=hosts, cwd=cwd, keep_dir=keep_dir, env_per_rank=env_per_rank,
               zygote=zygote)


def launch(argv: Sequence[str] | str, nranks: int, args: Iterable = (), env: Mapping[str, str] | None = None,
           timeout: float = 240.0, hosts: Sequence[str] | None = None, cwd: str | None = None,
           env_per_rank=None, zygote: bool = True) -> Ranks:
    """Runs ``python *argv *args`` on ``nranks`` ranks and waits for all of them (killing all
    after ``timeout`` seconds); returns :class:`Ranks`. A str ``argv`` is one script path. See
    :func:`start` for the other arguments (``zygote``: fork the ranks warm, the default)."""
    argv = [argv] if isinstance(argv, str) else list(argv)
    return start([*argv, *args], nranks, env=env, hosts=hosts, cwd=cwd, env_per_rank=env_per_rank,
                 zygote=zygote).wait(timeout)


def run_on_ranks(fn, nranks: int, *args, backend: str | None = "hccl", env: Mapping[str, str] | None = None,
                 timeout: float = 240.0, hosts: Sequence[str] | None = None, env_per_rank=None, zygote: bool = True,
                 **kwargs) -> Ranks:
    """Runs ``fn(*args, **kwargs)`` on ``nranks`` real rank processes and waits for them; returns
    :class:`Ranks` (``Ranks.values()`` holds each rank's return value).

    The function form of :func:`launch` (as torch's ``MultiProcessTestCase`` runs a test method in
    each rank): the rank code sits in the test module beside its asserts instead of in a worker
    script. Each rank is a fresh interpreter under the same environment policy as ``launch``
    (:func:`rank_env`); it imports ``fn``'s module by name (or from its file), runs
    :func:`npudist.testing.rank.prepare`, then ``npudist.testing.rank.init(backend)`` unless
    ``backend`` is None, calls ``fn``, reports its return value unless it is None as
    ``RESULT {"kind": "return", ...}`` (JSON; other values are str()-ed; so the ``RESULT`` lines a
    function printed itself with ``checks.report`` stay the last) and destroys the process group. An exception in ``fn``
    prints its traceback to the rank's stderr and exits 1 (``Ranks.check()`` shows it).

    fn: a module-level function (not a lambda, a closure, or one of ``__main__``); ``args`` and
    ``kwargs`` must pickle. backend: the process group to initialise before ``fn`` (e.g.
    ``"cpu:gloo,npu:hccl"``), None for none. env, timeout, hosts, env_per_rank: as :func:`launch`.
    zygote: fork the ranks from a warm process that has imported torch
    (:mod:`npudist.testing.zygote`; saves torch's import in every rank); False (or
    NPUDIST_TEST_ZYGOTE=0) starts fresh interpreters. A rank whose environment sets a variable
    read while torch is imported (``zygote.IMPORT_TIME_VARS``, e.g. TORCH_DISTRIBUTED_DEBUG) is
    started fresh anyway.
    Raises ValueError for a function the ranks cannot import.
    """
    import pickle

    module, qualname = getattr(fn, "__module__", None), getattr(fn, "__qualname__", "")
    if not module or module == "__main__" or "<" in qualname:
        raise ValueError(f"run_on_ranks needs a module-level function the ranks can import; got {fn!r} "
                         f"(module {module!r}, name {qualname!r}): define it at the top level of a module")
    source = getattr(getattr(fn, "__code__", None), "co_filename", "")
    fd, payload = tempfile.mkstemp(prefix="npudist-rank-args-", suffix=".pkl")
    try:
        with os.fdopen(fd, "wb") as f:
            pickle.dump((args, kwargs), f)
        argv = ["-m", "npudist.testing._rank_main", module, qualname, source, payload, backend or ""]
        return Job(argv, nranks, env=env, hosts=hosts, env_per_rank=env_per_rank, zygote=zygote).wait(timeout)
    finally:
        os.unlink(payload)


def run_python(argv: Sequence[str], env: Mapping[str, str] | None = None, timeout: float | None = 120.0,
               cwd: str | None = None, fresh: bool = False) -> subprocess.CompletedProcess:
    """Runs ``python *argv`` once (one process, no rank variables) under the harness's
    environment policy (:func:`clean_env`, one intra-op thread as the ranks and the zygote have
    it unless ``env`` sets OMP_NUM_THREADS, then ``env``) and returns what ``subprocess.run(...,
    capture_output=True, text=True)`` would: a ``CompletedProcess`` with ``args``, ``returncode``
    (negative: killed by that signal), ``stdout`` and ``stderr`` (str).

    argv: ``["-c", code, *args]``, ``["-m", module, *args]`` or a script path and its arguments.
    The process is forked from the warm zygote (:mod:`npudist.testing.zygote`: torch and
    torch.distributed already imported, nothing initialised, the ``torch.backends`` autoload run
    under the process's own environment), which saves torch's import (~2 s of CPU) per call. It is
    a fresh interpreter instead when ``fresh`` is True (for code whose point is the interpreter's
    start: import order, ``sys.modules`` contents, a module blocked before torch imports it, a
    ``.pth`` hook), when ``env`` sets an import-time variable (``zygote.IMPORT_TIME_VARS``, PYTHON*)
    differently from the zygote, or when NPUDIST_TEST_ZYGOTE=0.
    timeout: seconds; on expiry the process is killed and ``subprocess.TimeoutExpired`` raised
    (with the output so far), as ``subprocess.run`` does.
    """
    argv = [str(a) for a in argv]
    full_env = clean_env({"OMP_NUM_THREADS": "1", **(env or {})})
    cwd = cwd or REPO
    warm = None
    if not fresh:
        from npudist import _env  # (imports npudist, and so torch: only where processes are forked warm)

        if _env.get_bool("NPUDIST_TEST_ZYGOTE", True):
            from npudist.testing import zygote as _zygote

            warm = _zygote.get(lambda: clean_env({"OMP_NUM_THREADS": "1"}))
            if not warm.can_fork(full_env):
                warm = None
    if warm is None:
        return subprocess.run([sys.executable, *argv], env=full_env, capture_output=True, text=True,
                              timeout=timeout, cwd=cwd, stdin=subprocess.DEVNULL)
    d = tempfile.mkdtemp(prefix="npudist-run-")
    try:
        out, err = os.path.join(d, "out"), os.path.join(d, "err")
        proc = warm.spawn(argv, full_env, cwd, out, err)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            raise subprocess.TimeoutExpired([sys.executable, *argv], timeout, output=_read(out),
                                            stderr=_read(err)) from None
        except BaseException:
            proc.kill()
            proc.wait()
            raise
        return subprocess.CompletedProcess([sys.executable, *argv], proc.returncode, _read(out), _read(err))
    finally:
        shutil.rmtree(d, ignore_errors=True)


def _read(path: str) -> str:
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except FileNotFoundError:
        return ""
