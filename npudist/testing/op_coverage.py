"""Op coverage report: PyTorch's whole OpInfo database on npu against cpu.

For every op in op_db and every dtype the op lists for cpu, runs the op's
sample inputs on cpu and npu, forward and (where the op supports autograd and
the dtype is floating) backward, and compares (npudist.testing.opinfo).
Prints pass / fail / error / skip counts and every failing op with its reason
and, where known, the explanation; writes JSON.

    python -m npudist.testing.op_coverage [--json op_coverage.json] [--fraction 1.0] [--max-samples 4]

A failure is "explained" when a rule below names its cause; the target is
that every failure is explained and none is caused by npudist.
"""
from __future__ import annotations

import argparse
import collections
import json
import re
import sys
import time
import warnings
import zlib

import torch

from npudist.testing.opinfo import compare_op

# (op-name regex, dtype regex, reason regex, explanation). First match wins.
EXPLAINED = [
    # npudist's own error (csrc/core/aten/fallback.cpp) when a CPU kernel returns a sparse tensor; not
    # any reason that mentions "sparse" (a wrong value in a sparse-named op must stay unexplained)
    (r".*", r".*", r"^NotImplementedError: \S+ produced a Sparse\w* tensor: npu supports only strided \(dense\) "
                   r"tensors",
     "sparse layouts: npu supports strided (dense) tensors only, by design"),
    (r"svd_lowrank|pca_lowrank|nn\.functional\.multi_head_attention_forward|"
     r"nn\.functional\.scaled_dot_product_attention|nn\.functional\.fractional_max_pool[23]d", r".*", r"differs",
     "random by design: the op draws random numbers (randomized SVD's projection, dropout while training, "
     "fractional pooling's random intervals); "
     "npu draws from the npu generator, cpu from the cpu generator"),
    (r"nn\.functional\.mish|nn\.functional\.linear_cross_entropy|nn\.functional\.group_norm|native_group_norm"
     r"|addr|nn\.functional\.layer_norm", r"bfloat16|float16", r"differs",
     "low-precision rounding: cpu and npu run the same kernels, but for this op npu goes through "
     "PyTorch's decomposition (it has a CompositeImplicitAutograd kernel), cpu through a fused kernel"),
]


def explain(result) -> str:
    for op_re, dtype_re, reason_re, text in EXPLAINED:
        if re.fullmatch(op_re, result.name) and re.fullmatch(dtype_re, result.dtype) and re.search(
                reason_re, result.reason):
            return text
    return ""


def run(fraction=1.0, max_samples=4, verbose=True):
    warnings.filterwarnings("ignore")
    from torch.testing._internal.common_methods_invocations import op_db

    results = []
    start = time.time()
    for op in op_db:
        key = f"{op.name}.{op.variant_test_name}"
        if fraction < 1.0 and zlib.crc32(key.encode()) % 1000 >= fraction * 1000:
            continue
        for dtype in sorted(op.supported_dtypes("cpu"), key=str):
            r = compare_op(op, dtype, max_samples=max_samples)
            entry = dict(r.__dict__)
            entry["explanation"] = explain(r) if r.status in ("fail", "error") else ""
            results.append(entry)
            if verbose and r.status in ("fail", "error"):
                print(f"  {r.status:5} {r.name}.{r.variant} {r.dtype}: {r.reason[:160]}"
                      f"{'  [' + entry['explanation'][:60] + ']' if entry['explanation'] else '  [UNEXPLAINED]'}",
                      flush=True)
    counts = collections.Counter(r["status"] for r in results)
    unexplained = [r for r in results if r["status"] in ("fail", "error") and not r["explanation"]]
    return {"results": results, "counts": dict(counts), "unexplained": len(unexplained),
            "ops": len({(r["name"], r["variant"]) for r in results}), "seconds": time.time() - start,
            "torch": torch.__version__}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", default="op_coverage.json")
    ap.add_argument("--fraction", type=float, default=1.0, help="deterministic share of op_db to run")
    ap.add_argument("--max-samples", type=int, default=4, help="sample inputs per (op, dtype)")
    args = ap.parse_args(argv)
    import npudist  # noqa: F401  (registers npu when torch's backend autoload is off)

    report = run(args.fraction, args.max_samples)
    c = report["counts"]
    print(f"\nOpInfo on npu vs cpu: {report['ops']} ops, {len(report['results'])} (op, dtype) pairs, "
          f"{report['seconds']:.0f}s")
    print(f"{'pass':>8}{'fail':>8}{'error':>8}{'skip':>8}{'unexplained':>13}")
    print(f"{c.get('pass', 0):8}{c.get('fail', 0):8}{c.get('error', 0):8}{c.get('skip', 0):8}"
          f"{report['unexplained']:13}")
    with open(args.json, "w") as f:
        json.dump(report, f, indent=1)
    print(f"wrote {args.json}")
    return 1 if report["unexplained"] else 0


if __name__ == "__main__":
    sys.exit(main())
