"""The teardown reproduction (a job whose store host goes away), repeated: each repetition starts the ranks with
``torch.multiprocessing.start_processes(start_method="spawn")`` and runs teardown_job.body
in them (DeviceMesh on npu, DTensor, gloo sub-group, FSDP2 backward, destroy_process_group
unless MODE says otherwise). Prints one ``RESULT`` line per repetition: the ranks' exit codes
(negative: killed by that signal), the error start_processes raised, and what each rank found.

usage: teardown_spawn.py REPETITIONS OUTDIR [MODE [WORLD [SIZE]]]
"""
import json
import os
import socket
import sys
import time

import teardown_job
import torch.multiprocessing as mp


def rank_main(rank, world, port, outdir, mode, size):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank), WORLD_SIZE=str(world),
                      LOCAL_RANK=str(rank), LOCAL_WORLD_SIZE=str(world))
    teardown_job.body(rank, world, mode, size, outdir)


def main():
    reps, outdir = int(sys.argv[1]), sys.argv[2]
    mode = sys.argv[3] if len(sys.argv) > 3 else "destroy"
    world = int(sys.argv[4]) if len(sys.argv) > 4 else 2
    size = int(sys.argv[5]) if len(sys.argv) > 5 else 16
    for rep in range(reps):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        s.close()
        d = os.path.join(outdir, str(rep))
        os.makedirs(d, exist_ok=True)
        t0 = time.monotonic()
        ctx = mp.start_processes(rank_main, args=(world, port, d, mode, size), nprocs=world, join=False,
                                 start_method="spawn")
        error = None
        try:
            while not ctx.join(timeout=180):
                pass
        except Exception as e:  # noqa: BLE001 - a rank's failure is the result
            error = f"{type(e).__name__}: {e}"
            for p in ctx.processes:
                p.join(10)
        ranks = []
        for r in range(world):
            path = os.path.join(d, f"rank{r}.json")
            ranks.append(json.load(open(path)) if os.path.exists(path) else None)
        print("RESULT " + json.dumps({"rep": rep, "exitcodes": [p.exitcode for p in ctx.processes], "error": error,
                                      "ranks": ranks, "seconds": round(time.monotonic() - t0, 2)}), flush=True)


if __name__ == "__main__":
    main()
