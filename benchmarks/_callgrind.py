"""The small C library the instruction-count benchmarks load with ctypes to bracket the code
they measure under ``valgrind --tool=callgrind`` (valgrind's client requests are C macros).

    cg_start() / cg_stop()              zero the counters, instrument and collect; dump; stop instrumenting
    cg_start_collect() / cg_stop_named(name)   collect only (run with --instr-atstart=yes); dump as ``name``
"""
import os
import subprocess

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HELPER_C = r"""
#include <valgrind/callgrind.h>
void cg_start(void) { CALLGRIND_ZERO_STATS; CALLGRIND_START_INSTRUMENTATION; CALLGRIND_TOGGLE_COLLECT; }
void cg_stop(void) { CALLGRIND_TOGGLE_COLLECT; CALLGRIND_DUMP_STATS; CALLGRIND_STOP_INSTRUMENTATION; }
void cg_start_collect(void) { CALLGRIND_ZERO_STATS; CALLGRIND_TOGGLE_COLLECT; }
void cg_stop_named(const char* name) { CALLGRIND_TOGGLE_COLLECT; CALLGRIND_DUMP_STATS_AT(name); }
"""


def helper_lib():
    """Path of the built library (build/bench_callgrind/libnpudist_cg.so, compiled with cc once).
    Raises subprocess.CalledProcessError when cc or valgrind's headers are missing."""
    out_dir = os.path.join(REPO, "build", "bench_callgrind")
    os.makedirs(out_dir, exist_ok=True)
    src, lib = os.path.join(out_dir, "npudist_cg.c"), os.path.join(out_dir, "libnpudist_cg.so")
    if not os.path.exists(lib):
        with open(src, "w") as f:
            f.write(HELPER_C)
        subprocess.run(["cc", "-O2", "-shared", "-fPIC", "-o", lib, src], check=True)
    return lib
