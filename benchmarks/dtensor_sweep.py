"""DTensor op sweep report: op_db on DTensors over an npu mesh (hccl) and a cpu mesh (gloo), same run.

    ./run.sh bench dtensor_sweep [--fraction F] [--world-size 2] [--max-samples 2] [--max-combos 4]

A thin wrapper over ``python -m npudist.testing.dtensor_coverage`` (see there): prints
the pass counts of both meshes and the failures by cause, and writes
benchmarks/results/dtensor_sweep.json.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from npudist.testing import dtensor_coverage as coverage

if __name__ == "__main__":
    out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results", "dtensor_sweep.json")
    os.makedirs(os.path.dirname(out), exist_ok=True)
    args = sys.argv[1:]
    if "--json" not in args:
        args += ["--json", out]
    sys.exit(coverage.main(args))
