"""Launch a tests/dtensor/workers script on N real rank processes and collect its RESULT lines."""
import json
import os

from npudist.dtensor._launch import launch

WORKERS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "workers")


def run_worker(script, nranks, env=None, timeout=400):
    """Runs the worker; returns (Finished, list of rank 0's RESULT dicts). Fails the test on a non-zero exit."""
    finished = launch([os.path.join(WORKERS, script)], nranks, env=env, timeout=timeout)
    results = [json.loads(line[len("RESULT "):]) for line in finished.stdout[0].splitlines()
               if line.startswith("RESULT ")]
    summary = [r for r in results if r.get("kind") == "summary"]
    detail = "\n".join(summary[0]["failures"]) if summary else finished.explain()
    assert finished.ok(), f"{script} on {nranks} ranks failed:\n{detail[-8000:]}\n{finished.explain(1500)}"
    assert summary and not summary[0]["failures"] and summary[0]["checks"] > 0, detail
    return finished, results
