"""Helpers of the two-host tests and benchmark: npurun across the two hosts of
npudist.testing.netns.TwoHosts, running examples/train_gpt.py (FSDP2 + DCP checkpoints)."""
import os
import subprocess

from npudist.testing.npurun import NPURUN, npurun_env

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TRAIN = os.path.join(REPO, "examples", "train_gpt.py")
# A small model: the test is about the hosts, not the model.
MODEL = ["--d-model", "64", "--n-layer", "2", "--n-head", "2", "--seq-len", "32", "--batch-size", "4",
         "--max-bytes", "300000", "--eval-batches", "1", "--sample-len", "0", "--keep", "0"]


def env(**extra):
    """npurun's environment on a host: no NPUDIST_HOSTNAME (hostnames differ), Gloo on the veth."""
    e = npurun_env({"GLOO_SOCKET_IFNAME": "eth0", "NPUDIST_HOSTNAME": None, "OMP_NUM_THREADS": "1", **extra})
    e.pop("NPUDIST_HOSTNAME", None)
    return e


def npurun_argv(hosts, args, nnodes=2, nproc=2, rdzv_id="job", port=29400, max_restarts=0, npurun_args=()):
    """The npurun command line that runs the flagship with `args` on the hosts (c10d rendezvous at host 0).
    `nnodes`: a count or "MIN:MAX"; `npurun_args` go before the script."""
    return NPURUN + ["--nnodes", str(nnodes), "--nproc-per-node", str(nproc), "--rdzv-backend", "c10d",
                     "--rdzv-endpoint", f"{hosts.hosts[0].addr}:{port}", "--rdzv-id", rdzv_id,
                     "--max-restarts", str(max_restarts), *npurun_args, TRAIN, *args]


def start(hosts, index, log_path, args, nnodes=2, nproc=2, rdzv_id="job", port=29400, max_restarts=0,
          npurun_args=(), **extra_env):
    """npurun on host `index` (:func:`npurun_argv`), output to log_path; returns the Popen."""
    argv = npurun_argv(hosts, args, nnodes, nproc, rdzv_id, port, max_restarts, npurun_args)
    log = open(log_path, "w")
    try:
        return hosts.popen(index, argv, env=env(**extra_env), stdout=log, stderr=subprocess.STDOUT, cwd=REPO)
    finally:
        log.close()
