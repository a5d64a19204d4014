"""CPU time of hccl's reduction loops (csrc/hccl/reduce.cpp), this tree vs a git revision.

Compiles a small C++ harness (g++ -O2, as the extension) against reduce.cpp of
the working tree and of --base (default HEAD~3; `git show REV:csrc/hccl/reduce.cpp`),
then times `reduceInto(out, {a, b}, 2, n, dtype, SUM)` (two ranks' slots into an
output, in L1/L2) for float32 and bfloat16 at 256 B..64 KiB. Times are per-thread
CPU time (CLOCK_THREAD_CPUTIME_ID), best of 5 runs of 200 MB each, so other jobs
on the machine change them little; each line also prints a hash of the output,
which must be the same for both builds (the loops are bitwise identical).

    python benchmarks/reduce_loops.py [--base REV] [--json benchmarks/results/reduce_loops.json]
"""
import argparse
import json
import os
import subprocess
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
HARNESS = r"""
#include "hccl/reduce.h"
#include <c10/util/BFloat16.h>
#include <time.h>
#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <vector>
using namespace npudist::hccl;
static double cpuNs() { timespec ts; clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts); return ts.tv_sec * 1e9 + ts.tv_nsec; }
int main() {
  for (DType dt : {DType::kFloat, DType::kBFloat16}) {
    for (int64_t bytes : {256L, 4096L, 16384L, 65536L}) {
      const int64_t n = bytes / int64_t(elementSize(dt));
      std::vector<uint8_t> store(3 * bytes + 3 * 8192);
      uint8_t* a = (uint8_t*)(((uintptr_t)store.data() + 4095) & ~uintptr_t(4095));
      uint8_t* b = a + bytes + 4096;
      uint8_t* o = b + bytes + 4096;
      srand(1);
      for (int64_t i = 0; i < n; ++i) {
        float x = (rand() % 2000 - 1000) / 7.0f, y = (rand() % 2000 - 1000) / 3.0f;
        if (dt == DType::kFloat) { ((float*)a)[i] = x; ((float*)b)[i] = y; }
        else { ((c10::BFloat16*)a)[i] = x; ((c10::BFloat16*)b)[i] = y; }
      }
      const void* ins[2] = {a, b};
      const int iters = int(200000000 / bytes);
      double best = 1e30;
      for (int rep = 0; rep < 5; ++rep) {
        double t0 = cpuNs();
        for (int i = 0; i < iters; ++i) reduceInto(o, ins, 2, n, dt, RedOp::kSum, 2);
        best = std::min(best, (cpuNs() - t0) / iters / 1e3);
      }
      unsigned long h = 1469598103934665603UL;
      for (int64_t k = 0; k < bytes; ++k) h = (h ^ o[k]) * 1099511628211UL;
      printf("%s %ld %.4f %016lx\n", dtypeName(dt), (long)bytes, best, h);
    }
  }
}
"""


def build(reduce_src, out, tmp):
    import torch.utils.cpp_extension as ext

    torch_lib = os.path.join(os.path.dirname(ext.include_paths()[0]), "lib")
    harness = os.path.join(tmp, "harness.cpp")
    with open(harness, "w") as f:
        f.write(HARNESS)
    cmd = ["g++", "-O2", "-std=c++17", f"-I{os.path.join(REPO, 'csrc')}"] + [f"-I{p}" for p in ext.include_paths()] + \
        [harness, reduce_src, "-o", out, f"-L{torch_lib}", "-lc10", f"-Wl,-rpath,{torch_lib}"]
    subprocess.run(cmd, check=True)


def run(binary):
    rows = {}
    for line in subprocess.run([binary], check=True, capture_output=True, text=True).stdout.splitlines():
        dt, size, us, h = line.split()
        rows[f"{dt}/{size}"] = (float(us), h)
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--base", default="HEAD~3", help="git revision to compare with")
    ap.add_argument("--json", default=os.path.join(HERE, "results", "reduce_loops.json"))
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        base_src = os.path.join(tmp, "reduce_base.cpp")
        with open(base_src, "w") as f:
            f.write(subprocess.run(["git", "show", f"{a.base}:csrc/hccl/reduce.cpp"], cwd=REPO, check=True,
                                   capture_output=True, text=True).stdout)
        build(base_src, os.path.join(tmp, "base"), tmp)
        build(os.path.join(REPO, "csrc", "hccl", "reduce.cpp"), os.path.join(tmp, "now"), tmp)
        base, now = run(os.path.join(tmp, "base")), run(os.path.join(tmp, "now"))
        base2, now2 = run(os.path.join(tmp, "base")), run(os.path.join(tmp, "now"))  # interleaved second round
    print(f"reduceInto, 2 inputs, SUM: best CPU us per call ({a.base} vs working tree, two rounds interleaved)")
    print(f"{'dtype':>9} {'bytes':>6} {'base us':>8} {'now us':>8} {'base/now':>8}  same bits")
    out = {}
    for k in base:
        b = min(base[k][0], base2[k][0])
        n = min(now[k][0], now2[k][0])
        dt, size = k.split("/")
        same = base[k][1] == now[k][1]
        print(f"{dt:>9} {size:>6} {b:8.3f} {n:8.3f} {b / n:8.2f}  {'yes' if same else 'NO'}")
        out[k] = {"base_us": b, "now_us": n, "same_bits": same}
    os.makedirs(os.path.dirname(a.json), exist_ok=True)
    with open(a.json, "w") as fh:
        json.dump({"base": a.base, "rows": out}, fh, indent=1)
    print(f"JSON: {a.json}")


if __name__ == "__main__":
    main()
