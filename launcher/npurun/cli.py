"""``npurun``: start a job's ranks on the local npus with torch.distributed.run's elastic agent.

main() parses torchrun's flags (args.py), resolves ranks and devices, prints the plan
(--dry-run) or builds a torch ``LaunchConfig`` and runs ``elastic_launch``; afterwards it
stops anything of the job still running, removes the job's /dev/shm entries and prints
the summary (output.py).
"""
from __future__ import annotations

import os
import shutil
import signal
import socket
import sys
import tempfile
import threading
import time

from npudist import _env

from . import args as npuargs
from . import cleanup, jobwatch, output, rendezvous
from . import env as npuenv
from . import metrics as npumetrics
from . import plan as npuplan


def _visible_npus() -> int:
    import torch

    import npudist  # noqa: F401  (registers torch.npu when autoload is off)
    try:
        return torch.npu.device_count()
    except ValueError as e:
        raise npuargs.UsageError(str(e)) from None


def _command(args) -> tuple[object, list[str]]:
    """Entrypoint and arguments of each rank, as torchrun builds them."""
    if args.run_path:
        from torch.distributed.run import run_script_path
        return run_script_path, [args.training_script, *args.training_script_args]
    if args.no_python:
        return args.training_script, list(args.training_script_args)
    cmd_args = ["-u"] + (["-m"] if args.module else []) + [args.training_script, *args.training_script_args]
    return _env.get_str("PYTHON_EXEC", sys.executable), cmd_args


class Launch:
    """One npurun invocation after its arguments were parsed."""

    def __init__(self, args):
        self.args = args
        npuargs.validate(args)
        self.conf = rendezvous.parse_conf(args.rdzv_conf)
        self.nproc = npuargs.resolve_nproc(args.nproc_per_node, _visible_npus())
        redirects = npuargs.parse_std("--redirects", args.redirects, self.nproc)
        tee = npuargs.parse_std("--tee", args.tee, self.nproc)
        self.console = output.console_streams(redirects, tee)
        self.ranks_filter = npuargs.parse_ranks_filter(args.local_ranks_filter, self.nproc)
        rendezvous.apply_defaults(args)
        self.min_nodes, self.max_nodes = npuargs.parse_nnodes(args.nnodes)
        self.faults = npuargs.fault_specs(args)
        if self.faults and self.min_nodes == self.max_nodes:
            from npudist import fault_inject
            try:
                fault_inject.check_world(fault_inject.parse(self.faults), self.nproc * self.max_nodes,
                                         "--inject-fault/NPUDIST_FAULT_INJECT")
            except fault_inject.FaultSpecError as e:
                raise npuargs.UsageError(str(e)) from None
        self.tag = npuenv.job_tag()
        user = npuenv.user_threads()
        self.threads = [user] * self.nproc if user else [str(t) for t in npuenv.threads_per_rank(self.nproc)]
        self.grace = args.shutdown_timeout if args.shutdown_timeout is not None else \
            _env.get_int("TORCH_ELASTIC_SHUTDOWN_TIMEOUT", 30, lo=0)
        self.entrypoint, self.cmd_args = _command(args)
        self.host_label = _env.get_str("NPUDIST_HOSTNAME") or socket.gethostname()
        self.node_id = f"{self.host_label}/{os.getpid()}"
        # several nodes (jobwatch.py): npurun's store server, board, agent phase, watch thread
        self.server = self.board = self.phase = self.watch = None
        self.signals: cleanup.SignalState | None = None
        self.logs: output.NpurunLogsSpecs | None = None
        self.metrics: npumetrics.NodeMetrics | None = None  # --metrics-port
        self.start = time.monotonic()
        self.log_dir: str | None = None
        self._final = threading.Lock()  # whoever takes it prints the summary and decides the exit code

    def plan(self, log_dir: str) -> npuplan.Plan:
        """The plan --dry-run prints."""
        a = self.args
        fixed_nodes = self.min_nodes == self.max_nodes
        static = a.rdzv_backend == "static"
        node_rank = a.node_rank if static else (0 if self.max_nodes == 1 else None)
        ranks = [npuplan.RankPlan(local_rank=i,
                                  global_rank=node_rank * self.nproc + i if node_rank is not None else None,
                                  device=dev, physical_id=phys, threads=self.threads[i])
                 for i, (dev, phys) in enumerate(npuenv.device_map(self.nproc))]
        command = [self.entrypoint if isinstance(self.entrypoint, str) else "runpy.run_path", *self.cmd_args]
        return npuplan.Plan(nnodes=a.nnodes, nproc=self.nproc, node_rank=node_rank, rdzv_backend=a.rdzv_backend,
                            rdzv_endpoint=rendezvous.endpoint(a), rdzv_id=a.rdzv_id, command=command,
                            job_tag=self.tag, log_dir=log_dir, max_restarts=a.max_restarts,
                            grace_seconds=self.grace, ranks=ranks,
                            world_size=self.nproc * self.max_nodes if fixed_nodes else None,
                            metrics_endpoint=self._metrics_endpoint())

    def _metrics_endpoint(self) -> str | None:
        port = self.args.metrics_port
        if port is None:
            return None
        addr = self.args.metrics_addr or "127.0.0.1"
        return f"http://{f'[{addr}]' if ':' in addr else addr}:{port if port else '<any free port>'}/metrics"

    def _start_metrics(self) -> dict[str, str]:
        """--metrics-port: starts the node endpoint; returns what every rank's environment needs."""
        if self.args.metrics_port is None:
            return {}
        self.metrics = npumetrics.NodeMetrics(self.args.metrics_addr or "127.0.0.1", self.args.metrics_port,
                                              lambda: self.logs.envs if self.logs else {}, self.host_label)
        return self.metrics.start().rank_env()

    def _end_metrics(self, outcome: output.Outcome) -> None:
        """Records how the ranks ended, serves --metrics-linger seconds more, stops the endpoint."""
        if self.metrics is None:
            return
        try:
            envs = self.logs.envs if self.logs else {}
            self.metrics.finish(outcome.failures, envs, succeeded=outcome.status == "ok")
            ran = bool(self.logs and self.logs.attempts) and self.metrics.port is not None
            if self.args.metrics_linger and ran and outcome.status != "interrupted":
                seen = len(self.signals.received) if self.signals else 0
                self.metrics.linger(self.args.metrics_linger,
                                    lambda: bool(self.signals) and len(self.signals.received) > seen)
        finally:
            self.metrics.close()

    def config(self, logs_specs):
        """torch's LaunchConfig for this job."""
        from torch.distributed.launcher.api import LaunchConfig
        a = self.args
        conf = dict(self.conf)
        if a.rdzv_backend == "static":
            conf["rank"] = a.node_rank
        # SIGINT and SIGTERM stay with npurun (cleanup.SignalState); torch forwards the others
        signals = ",".join(s.strip() for s in a.signals_to_handle.split(",")
                           if s.strip() and s.strip() not in ("SIGINT", "SIGTERM"))
        return LaunchConfig(
            min_nodes=self.min_nodes, max_nodes=self.max_nodes, nproc_per_node=self.nproc, run_id=a.rdzv_id,
            role=a.role, rdzv_endpoint=rendezvous.endpoint(a), rdzv_backend=a.rdzv_backend, rdzv_configs=conf,
            max_restarts=a.max_restarts, monitor_interval=a.monitor_interval, start_method=a.start_method,
            log_line_prefix_template=_env.get_str("TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE", output.DEFAULT_PREFIX),
            local_addr=a.local_addr, logs_specs=logs_specs, event_log_handler=a.event_log_handler,
            signals_to_handle=signals or "SIGHUP", duplicate_stdout_filters=a.duplicate_stdout_filters,
            duplicate_stderr_filters=a.duplicate_stderr_filters, virtual_local_rank=a.virtual_local_rank,
            shutdown_timeout=self.grace)

    def preflight(self) -> None:
        """Bounded wait for a rendezvous endpoint this node does not host (raises RendezvousUnreachable)."""
        remote = rendezvous.remote_endpoint(self.args, self.conf)
        if remote is None:
            return
        timeout = self.args.rdzv_connect_timeout
        if timeout is None:
            timeout = float(self.conf.get("read_timeout", npuargs.DEFAULT_CONNECT_TIMEOUT))
        rendezvous.wait_reachable(*remote, timeout=timeout)

    def _between_attempts(self, attempt: int) -> None:
        if attempt == 0:
            return
        cleanup.stop_descendants(grace=min(self.grace, 5))
        cleanup.remove_shm(self.tag)
        print(f"npurun: restarting the job (attempt {attempt + 1} of {self.args.max_restarts + 1})",
              file=sys.stderr, flush=True)

    def _start_watch(self) -> None:
        """Several nodes: npurun's store server (c10d host), board, agent phase and watch thread."""
        if self.max_nodes <= 1 or self.args.rdzv_backend != "c10d":
            return
        from torch.distributed.elastic.rendezvous.utils import parse_rendezvous_endpoint
        self.server = rendezvous.own_store(self.args, self.conf, self.max_nodes)
        host, port = parse_rendezvous_endpoint(rendezvous.endpoint(self.args), default_port=29400)
        if port == 0:
            return
        self.board = jobwatch.Board(host, port, self.args.rdzv_id, server=self.server)
        self.phase = jobwatch.AgentPhase(on_succeeded=self._local_succeeded)
        self.phase.install()
        self.watch = jobwatch.Watch(self.board, self.phase, lambda: self.node_id, self._stuck)
        self.watch.start()

    def _local_succeeded(self) -> None:
        # runs in the agent's thread right before its exit barrier: the others can count this node
        self.board.add("succeeded")

    def _group_world_size(self) -> int:
        envs = self.logs.envs if self.logs else {}
        env = next(iter(envs.values()), {})
        return int(env.get("GROUP_WORLD_SIZE", self.max_nodes))

    def _publish(self, outcome: output.Outcome) -> None:
        if self.board is None or outcome.status != "failed" or not outcome.failures:
            return
        record = {"node": self.node_id, "host": self.host_label,
                  "failures": [{"rank": f.rank, "local_rank": f.local_rank, "pid": f.pid, "exitcode": f.exitcode,
                                "error": f.error} for f in outcome.failures]}
        try:
            self.board.publish_failure(record)
        except jobwatch.BoardUnreachable:
            pass

    def _linger(self) -> None:
        """The end of a several-node run: say this node is finished; the node hosting the store
        keeps it up (at most jobwatch.LINGER s, or until a signal) until every node is finished."""
        if self.board is None:
            return
        try:
            self.board.add("finished")
        except jobwatch.BoardUnreachable:
            return
        if self.server is None:
            return
        deadline = time.monotonic() + jobwatch.LINGER
        nodes = self._group_world_size()
        while time.monotonic() < deadline and not (self.signals and self.signals.received):
            try:
                if self.board.count("finished") >= nodes:
                    return
            except jobwatch.BoardUnreachable:
                return
            time.sleep(0.1)

    def _claim(self) -> bool:
        return self._final.acquire(blocking=False)

    def _end_from_thread(self, outcome: output.Outcome, grace: float) -> None:
        """Ends npurun from a helper thread while the agent is blocked: stop the job, remove its
        /dev/shm entries, print the summary, exit (logs are kept: the outcome is never "ok")."""
        if self.signals is not None:
            self.signals.taken_over = True
        if self.watch is not None:
            self.watch.stop()
        try:
            outcome.killed_leftovers = len(cleanup.stop_descendants(grace=grace))
            outcome.removed_shm = cleanup.remove_shm(self.tag)
            self._publish(outcome)
            if outcome.status != "interrupted":
                self._linger()
            if self.metrics is not None:
                self.metrics.close()
            outcome.seconds = time.monotonic() - self.start
            outcome.attempts = len(self.logs.attempts) if self.logs else 0
            outcome.log_dir = (self.logs.attempt_dir() if self.logs else None) or self.log_dir
            print(output.summary(outcome), file=sys.stderr, flush=True)
        finally:
            sys.stdout.flush()
            os._exit(outcome.exit_code())

    def _new_outcome(self) -> output.Outcome:
        return output.Outcome(status="ok", seconds=0.0, nproc=self.nproc, max_restarts=self.args.max_restarts,
                              node=self.host_label)

    def _stuck(self, reason: str) -> None:
        """Watch thread: the local ranks are done and the agent waits for nodes that will not come."""
        if not self._claim():
            return
        outcome = self._new_outcome()
        if reason == "remote-failure":
            outcome.status = "failed"
            outcome.remote_failures = output.remote_failures(self.watch.remote)
        else:
            outcome.status = "error"
            outcome.message = self._lost_message()
        self._end_from_thread(outcome, grace=min(self.grace, 5))

    def _lost_message(self) -> str:
        return (f"lost the rendezvous store at {rendezvous.endpoint(self.args)} before every node finished: the "
                f"npurun hosting it ended (its ranks probably failed; see its output). This node's "
                f"{self.nproc} local rank(s) did not fail")

    def _signal_exit(self, signum: int) -> None:
        """Signal watcher: SIGINT/SIGTERM while the agent is blocked in a C++ call."""
        if not self._claim():
            return
        outcome = self._new_outcome()
        outcome.status, outcome.signal_name = "interrupted", signal.Signals(signum).name
        self._end_from_thread(outcome, grace=self.grace)

    def run(self) -> output.Outcome:
        """Starts the job and returns its outcome; always stops leftovers and removes /dev/shm entries."""
        from torch.distributed.elastic.multiprocessing import SignalException
        from torch.distributed.elastic.multiprocessing.errors import ChildFailedError
        from torch.distributed.elastic.rendezvous import RendezvousError, RendezvousTimeoutError
        from torch.distributed.launcher.api import elastic_launch

        a = self.args
        self.start = start = time.monotonic()
        own_dir = not a.log_dir
        self.log_dir = log_dir = a.log_dir or tempfile.mkdtemp(prefix="npurun-")
        outcome = self._new_outcome()
        signals = self.signals = cleanup.SignalState(on_blocked=self._signal_exit)
        logs = None
        try:
            signals.install()
            cleanup.become_subreaper()
            os.environ.update(npuenv.launcher_env(self.tag, a.profile_dir, a.profile_steps, a.nnodes))
            if self.faults:  # the ranks' faults (docs/fault_injection.md)
                os.environ["NPUDIST_FAULT_INJECT"] = self.faults
            self.preflight()
            self._start_watch()
            metrics_env = self._start_metrics()
            extra = {i: {npuenv.THREADS: self.threads[i], **metrics_env} for i in range(self.nproc)}
            logs = self.logs = output.NpurunLogsSpecs(log_dir, self.console, self.ranks_filter, extra,
                                                      self._between_attempts)
            elastic_launch(self.config(logs), self.entrypoint)(*self.cmd_args)
            if self.watch is not None:
                reachable = self.watch.poll()
                if self.watch.remote:
                    outcome.status = "failed"
                elif (not reachable and self.server is None and a.rdzv_backend == "c10d"
                      and self.watch.succeeded < self._group_world_size()):
                    # torch treats a failed exit barrier as success; the store host left early
                    outcome.status, outcome.message = "error", self._lost_message()
        except ChildFailedError as e:
            outcome.status = "failed"
            for rank, f in e.failures.items():
                err = output.first_error_line(logs.stderr_file(f.local_rank) if logs else None)
                if err is None and isinstance(f.message, dict):
                    err = (str(f.message.get("message", "")).splitlines() or [None])[0]
                outcome.failures.append(output.RankFailure(rank, f.local_rank, f.pid, f.exitcode, err))
        except SignalException as e:
            outcome.status = "interrupted"
            sig = signals.interrupted or e.sigval
            outcome.signal_name = signal.Signals(sig).name
        except KeyboardInterrupt:
            outcome.status, outcome.signal_name = "interrupted", "SIGINT"
        except rendezvous.RendezvousUnreachable as e:
            outcome.status, outcome.message = "error", str(e)
        except RendezvousTimeoutError as e:
            outcome.status = "error"
            outcome.message = (f"rendezvous timed out ({e}): not all of --nnodes {a.nnodes} joined run id "
                               f"{a.rdzv_id!r} at {rendezvous.endpoint(a)}. Start npurun on every node with the same "
                               f"--rdzv-endpoint, --rdzv-id and --nnodes; --rdzv-conf join_timeout=SECONDS sets the wait")
        except RendezvousError as e:
            outcome.status = "error"
            outcome.message = (f"rendezvous at {rendezvous.endpoint(a)} failed: {e} "
                               f"({type(e).__name__}{': ' + str(e.__cause__) if e.__cause__ else ''})")
            if logs and logs.attempts and self.watch is not None and self.watch.remote:
                outcome.status = "failed"  # the job ran; the store went away after another node failed
        except Exception as e:  # a launcher-side failure: still clean up and say what happened
            outcome.status, outcome.message = "error", f"{type(e).__name__}: {e}"
        finally:
            if not self._claim():  # a helper thread is ending npurun (it exits the process)
                while True:
                    time.sleep(3600)
            if self.watch is not None:
                self.watch.stop()
            signals.quiet()
            second_signal = len(signals.received) > 1
            leftovers = cleanup.stop_descendants(grace=0 if second_signal else min(self.grace, 5))
            outcome.killed_leftovers = len(leftovers)
            outcome.removed_shm = cleanup.remove_shm(self.tag)
            if outcome.status == "ok" and signals.received:
                outcome.status, outcome.signal_name = "interrupted", signal.Signals(signals.received[0]).name
            if self.watch is not None:
                if outcome.status == "failed":
                    self._publish(outcome)
                    self.watch.poll()
                if outcome.status == "failed" and self.watch.remote:
                    outcome.remote_failures = output.remote_failures(self.watch.remote)
                self._linger()
            self._end_metrics(outcome)
        outcome.seconds = time.monotonic() - start
        outcome.attempts = len(logs.attempts) if logs else 0
        outcome.log_dir = (logs.attempt_dir() if logs else None) or log_dir
        if own_dir and outcome.status == "ok" or own_dir and outcome.status == "error" and not (logs and logs.attempts):
            shutil.rmtree(log_dir, ignore_errors=True)
            outcome.logs_kept = False
        return outcome


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``npurun`` console script; returns the process exit code."""
    parser = npuargs.build_parser()
    args = parser.parse_args(argv)
    try:
        sys.stdout.reconfigure(line_buffering=True)
    except (AttributeError, ValueError):
        pass
    try:
        launch = Launch(args)
    except (npuargs.UsageError, ValueError) as e:
        parser.error(str(e))  # exits 2 with the usage line
    if args.dry_run:
        print(launch.plan(args.log_dir or "(a temporary directory, removed after a successful run)").format())
        return 0
    outcome = launch.run()
    print(output.summary(outcome), file=sys.stderr, flush=True)
    return outcome.exit_code()


def console_main() -> None:
    """``npurun`` console script."""
    sys.exit(main())


if __name__ == "__main__":
    console_main()
