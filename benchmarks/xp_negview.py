"""Costs around negative-stride views (npudist/xp/_negview.py).

Two groups of per-call costs on 16-element arrays, each next to NumPy's same call in the same run
(interleaved reps, median):

* ``plain``: ordinary arrays' paths that the negative-stride support touches (``__getitem__``
  with ints / slices / positive steps, ``strides``, ``base``, ``T``, ``__setitem__``, ``+``):
  they must not slow down. Compare two builds by running this script with each on PYTHONPATH
  (before/after) and comparing the ``xp/np`` columns;
* ``neg``: the same operations on a negative-stride view (``a[::-1]``), which pay a mirror
  refresh per op and a write-back per write.

    python benchmarks/xp_negview.py [--reps 7] [--json benchmarks/results/xp_negview.json]
"""
import argparse
import json
import os
import statistics
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _timing import timed

import npudist.xp as xp


def _cases(mod, a):
    b = a[::-1]
    one = mod.ones(16, dtype=a.dtype)
    return {
        "plain a[3]": lambda: a[3],
        "plain a[2:9]": lambda: a[2:9],
        "plain a[::2]": lambda: a[::2],
        "plain a[None, 1:]": lambda: a[None, 1:],
        "plain a.strides": lambda: a.strides,
        "plain a.base": lambda: a.base,
        "plain a.T": lambda: a.T,
        "plain a[2:5] = 1": lambda: a.__setitem__(slice(2, 5), 1),
        "plain a + 1": lambda: a + one,
        "neg a[::-1]": lambda: a[::-1],
        "neg b[3]": lambda: b[3],
        "neg b + 1": lambda: b + one,
        "neg b[2:5] = 1": lambda: b.__setitem__(slice(2, 5), 1),
        "neg b += 1": lambda: b.__iadd__(one),
        "neg b.sum()": lambda: b.sum(),
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    n = np.arange(16, dtype=np.float32)
    x = xp.asarray(n)
    cn, cx = _cases(np, n.copy()), _cases(xp, x)
    rows = []
    for name in cn:
        tn, tx = [], []
        for _ in range(args.reps):
            tn.append(timed(cn[name], args.calls))
            tx.append(timed(cx[name], args.calls))
        mn, mx = statistics.median(tn) * 1e6, statistics.median(tx) * 1e6
        rows.append({"case": name, "numpy_us": round(mn, 3), "xp_us": round(mx, 3), "xp_over_np": round(mx / mn, 2)})
        print(f"{name:22s} numpy {mn:8.2f} us   xp {mx:8.2f} us   xp/np {mx / mn:7.2f}")
    res = {"load": os.getloadavg(), "xp_file": xp.__file__, "rows": rows}
    if args.json:
        os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
        with open(args.json, "w") as f:
            json.dump(res, f, indent=1)
    return res


if __name__ == "__main__":
    main()
